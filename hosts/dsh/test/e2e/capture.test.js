// Memory that forms itself, in the real `dsh` CLI (0.1.0-rc.8) against a recording fake model and a real
// `plur serve`: session 1 (one `dsh web` session, four user turns typed in a real browser) mentions four
// facts without asking to remember anything, one of them with an API key in the same sentence; session 2
// is new processes (`dsh --profile headless`), one question about each fact: the first request's block
// holds the right fact, the key is nowhere in the plur home, and the skip is counted.
//
// `npm run e2e` in hosts/dsh.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { PYTHON, startPlur, warm } from '../support/plur.js'
import { ensureInstalled, launchChromium, PKG, run, startDshWeb } from './install.js'
import { startModel, systemOf, turnOf } from './model.js'

// Made at run time, so no key-shaped string sits in the repository; shaped like an OpenAI project key.
const KEY = 'sk-proj-' + randomBytes(36).toString('base64url').replace(/[-_]/g, 'x')
const FACTS = [
  ['My sister Lena moved to Vienna last spring.', 'Where does my sister live now?', /Lena moved to Vienna/],
  [`Our staging database runs on host db-stage-7 and its API key is ${KEY} for now.`, 'Which host runs our staging database?', /db-stage-7/],
  ['I am allergic to peanuts, so the team dinner has to avoid them.', 'What food allergy do I have?', /allergic to peanuts/],
  ['The kappa release train leaves every second Tuesday morning.', 'How often does the kappa release train leave?', /every second Tuesday/],
]
const CHROMIUM = process.env.PLUR_CHROMIUM ?? '/usr/bin/chromium'
const browserMissing = !existsSync(CHROMIUM) && process.env.PLUR_REQUIRE_BROWSER !== '1'
const script = (body) => {
  if (!(body.tools?.length > 0)) return { text: 'Session title' }
  const { question } = turnOf(body, FACTS.flatMap(([said, asked]) => [said, asked]))
  return { text: question === undefined ? 'ok' : `Noted: ${question.slice(0, 20)}` }
}
let work, install, service, model, clone
const say = (line) => console.log(line)

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'plur-e2e-capture-'))
  install = await ensureInstalled(say)
  const { out: packed } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: PKG })
  clone = join(work, 'clone')
  for (const { path } of JSON.parse(packed)[0].files) await cp(join(PKG, path), join(clone, 'hosts', 'dsh', path), { recursive: true })
  const home = join(work, 'plur')
  await mkdir(home)
  service = await startPlur(home)
  await service.api.request('POST', '/learn', { statement: 'The office plants are watered on Fridays.', scope: 'global' })
  await warm(service.api)
  model = await startModel({ script })
})

after(async () => {
  await model?.close()
  await service?.stop()
  if (work !== undefined) await rm(work, { recursive: true, force: true })
})

function environment (name) {
  const root = join(work, name)
  return {
    ...install.env, HOME: join(root, 'home'), DSH_HOME: join(root, 'dsh'), PLUR_HOME: service.home, HF_HUB_OFFLINE: '1',
    DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'sk-e2e-not-a-key', DSH_TELEMETRY_DISABLED: '1',
  }
}

/** Every file below `dir` whose bytes contain `needle`. */
async function filesHolding (dir, needle) {
  const found = []
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const file = join(entry.parentPath ?? entry.path, entry.name)
    if (!entry.isFile() || (await stat(file)).size > 256 * 1024 * 1024) continue
    if ((await readFile(file)).includes(needle)) found.push(file)
  }
  return found
}

test('session 1 in dsh web mentions four facts (one with an API key); session 2, new headless processes, gets the right fact in each first block; the key is nowhere in the home and the skip is counted', { skip: browserMissing && `no chromium at ${CHROMIUM}` }, async () => {
  const env = environment('one')
  await mkdir(join(env.HOME, 'kappa'), { recursive: true })
  assert.equal((await run(install.dsh, ['plugin', '--profile', 'web', 'add', './hosts/dsh'], { cwd: clone, env })).code, 0)
  const { server, url } = await startDshWeb(install.dsh, { cwd: clone, env })
  const browser = await launchChromium(CHROMIUM)
  try {
    const page = await browser.newPage()
    page.setDefaultTimeout(120000)
    await page.goto(url, { waitUntil: 'networkidle' })
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.getByRole('button', { name: 'Choose workspace' }).click()
    await page.getByText('kappa', { exact: true }).click()
    await page.getByRole('button', { name: 'Open' }).click()
    for (const [said] of FACTS) {
      await page.locator('textarea').fill(said)
      await page.getByRole('button', { name: 'Send message' }).click()
      await page.getByText(`Noted: ${said.slice(0, 20)}`, { exact: true }).last().waitFor()
    }
  } finally {
    await browser.close()
    const exited = new Promise((resolve) => server.once('exit', resolve))
    server.kill('SIGTERM')
    const timer = setTimeout(() => server.kill('SIGKILL'), 15000)
    await exited
    clearTimeout(timer)
  }
  // capture is off the turn path: wait until the four turns are stored (or the deadline)
  const deadline = Date.now() + 120000
  let captured = []
  while (captured.length < FACTS.length && Date.now() < deadline) {
    captured = (await service.api.request('POST', '/list', { limit: 100 })).engrams.filter((e) => e.source?.kind === 'conversation')
    if (captured.length < FACTS.length) await new Promise((resolve) => setTimeout(resolve, 250))
  }
  say(`  captured: ${JSON.stringify(captured.map((e) => [e.scope, e.statement.slice(0, 60)]))}`)
  assert.equal(captured.length, FACTS.length, 'each typed turn stored once')
  await warm(service.api)

  const two = environment('two')
  await mkdir(join(two.HOME), { recursive: true })
  assert.equal((await run(install.dsh, ['plugin', '--profile', 'headless', 'add', './hosts/dsh'], { cwd: clone, env: two })).code, 0)
  const cwd = join(env.HOME, 'kappa')
  for (const [, asked, fact] of FACTS) {
    const before = model.requests.length
    const result = await run(install.dsh, ['--profile', 'headless', asked], { cwd, env: two })
    assert.equal(result.code, 0)
    const first = model.requests.slice(before).find((body) => body.tools?.length > 0)
    const block = /<plur-memory>[\s\S]*<\/plur-memory>/.exec(systemOf(first))?.[0] ?? ''
    say(`  ${JSON.stringify(asked)}: block ${block.length} chars, ${fact.test(block) ? 'holds' : 'LACKS'} ${fact}`)
    assert.match(block, fact, `the first request's block answers ${JSON.stringify(asked)}`)
    assert.ok(!block.includes(KEY), 'the key never reaches a block')
  }
  await service.stop()
  const holding = await filesHolding(service.home, Buffer.from(KEY))
  assert.deepEqual(holding, [], `the API key is nowhere in the plur home (found in ${holding.join(', ')})`)
  const doctor = JSON.parse(execFileSync(PYTHON, ['-m', 'plur', '--home', service.home, 'doctor', '--json', '--no-model'], { encoding: 'utf8', env: { ...process.env, PLUR_AUTOSTART_SERVICE: '0', HF_HUB_OFFLINE: '1' } }))
  const skipped = JSON.stringify(doctor).match(/"(?:secrets?_(?:skipped|screened|redacted)|screened|redacted)[^"]*":\s*(\{[^}]*\}|\d+)/)
  say(`  plur doctor: ${skipped?.[0] ?? JSON.stringify(doctor).slice(0, 300)}`)
  assert.ok(skipped && /[1-9]/.test(skipped[1]), 'plur doctor counts the screened secret')
})
