// Memory that stays true to what the user said (issue 46), in the real `dsh` CLI (0.1.0-rc.8) against a recording
// fake model and a real `plur serve`, capture on as a user has it:
//
// 1. a compound question asked again keeps both answers: two facts said in two headless sessions of a fresh
//    repository; a new session asks one question about both, another asks it again: each first request's block
//    holds both notes (their ids) and never the question, which is never stored;
// 2. one `dsh web` session (a real browser): "hi" gets the overview, which lists the port fact; the prompt that asks
//    for it then gets the note whole, with its id; the compound question twice more, both notes each time;
//    `/plur capture off`, then a private sentence typed;
// 3. `plur ingest` of that DSH home into the same plur home: the sentence typed with capture off is not stored
//    (left_out.off), though it is in the session log; the facts captured live are not stored twice.
//
// (A personal fact said in repo A reaching repo B's first request, and the first headless run's message: see
// first-run.test.js.) `npm run e2e` in hosts/dsh; this file alone: node --test test/e2e/truth.test.js
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { PYTHON, startPlur, warm } from '../support/plur.js'
import { ensureInstalled, launchChromium, PKG, run, startDshWeb } from './install.js'
import { contentText, startModel, systemOf, turnOf } from './model.js'

const DEPLOY = 'We deploy the billing service from the branch release-candidate.'
const PORT = 'The web package\'s dev server listens on port 5173.'
const ASKED = 'Which port does the web dev server listen on, and which branch do we deploy from?'
const PORT_ASKED = 'Which port does the web dev server listen on?'
// said after the question: once it is stored, the service's capture thread (one, in order) has seen the question
const MARK = 'My cat Tofu sleeps on the radiator.'
const HI = 'hi'
const PRIVATE = 'My therapist appointment moved to Tuesday at four.'
const TYPED = [DEPLOY, PORT, ASKED, PORT_ASKED, MARK, HI, PRIVATE]
const CHROMIUM = process.env.PLUR_CHROMIUM ?? '/usr/bin/chromium'
const browserMissing = !existsSync(CHROMIUM) && process.env.PLUR_REQUIRE_BROWSER !== '1'
// one answer per typed message, numbered by how often it was typed in the conversation (a web session asks twice)
const script = (body) => {
  if (!(body.tools?.length > 0)) return { text: 'Session title' }
  const { question } = turnOf(body, TYPED)
  if (question === undefined) return { text: 'ok' }
  const n = (body.messages ?? []).filter((m) => m.role === 'user' && contentText(m).trim() === question).length
  return { text: `Answer ${n} to: ${question}` }
}
let work, install, service, model, clone, env, repo
const ids = {}
const say = (line) => console.log(line)
const plurEnv = { ...process.env, HF_HUB_OFFLINE: '1', PLUR_AUTOSTART_SERVICE: '0' }

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'plur-e2e-truth-'))
  install = await ensureInstalled(say)
  const { out: packed } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: PKG })
  clone = join(work, 'clone')
  for (const { path } of JSON.parse(packed)[0].files) await cp(join(PKG, path), join(clone, 'hosts', 'dsh', path), { recursive: true })
  const home = join(work, 'plur')
  await mkdir(home)
  service = await startPlur(home)
  await warm(service.api)
  model = await startModel({ script })
  const root = join(work, 'dsh-user')
  env = {
    ...install.env, HOME: join(root, 'home'), DSH_HOME: join(root, 'dsh'), PLUR_HOME: home, HF_HUB_OFFLINE: '1',
    DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'sk-e2e-not-a-key', DSH_TELEMETRY_DISABLED: '1',
  }
  delete env.PLUR_CAPTURE
  repo = join(env.HOME, 'shop') // a fresh repository, in the home so that dsh web's workspace picker lists it
  await mkdir(join(repo, '.git'), { recursive: true })
  await mkdir(env.DSH_HOME, { recursive: true })
  assert.equal((await run(install.dsh, ['plugin', '--profile', 'headless', 'add', './hosts/dsh'], { cwd: clone, env, timeoutMs: 10 * 60000 })).code, 0)
  // session 1: two facts, said without asking to remember either (two headless runs)
  await ask(DEPLOY)
  await ask(PORT)
  const notes = await stored([DEPLOY, PORT])
  for (const s of [DEPLOY, PORT]) ids[s] = notes.find((e) => e.statement === s)?.id
  say(`  captured: ${JSON.stringify(notes.map((e) => [e.id, e.scope, e.statement]))}`)
  assert.ok(ids[DEPLOY] && ids[PORT], 'both facts captured')
  await warm(service.api)
})

after(async () => {
  await model?.close()
  await service?.stop()
  if (work !== undefined) await rm(work, { recursive: true, force: true })
})

/** One headless task in the repository; the agent's first model request (title requests left out). */
async function ask (text) {
  const before = model.requests.length
  const result = await run(install.dsh, ['--profile', 'headless', text], { cwd: repo, env, timeoutMs: 10 * 60000 }).catch((error) => error)
  say(`$ dsh --profile headless ${JSON.stringify(text)}: exit ${result.code}, ${(result.ms / 1000).toFixed(1)} s`)
  assert.equal(result.code, 0, `dsh exited ${result.code}:\n${result.err}`)
  return model.requests.slice(before).find((body) => body.tools?.length > 0)
}

const blockOf = (body) => /<plur-memory>[\s\S]*<\/plur-memory>/.exec(systemOf(body))?.[0] ?? ''

/** Every active note, once each of `statements` is stored (capture is off the turn path) or the deadline passed. */
async function stored (statements) {
  const deadline = Date.now() + 120000
  for (;;) {
    const notes = (await service.api.request('POST', '/list', { limit: 200 })).engrams
    if (statements.every((s) => notes.some((e) => e.statement === s)) || Date.now() > deadline) return notes
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

/**
 * What is wrong with the block of an asking of the compound question: it must hold both facts' notes (their ids:
 * the overview's lines carry none) and never the question. Collected, not thrown, so that a run goes on to the
 * later askings and says everything that is wrong at once.
 */
function holdsBoth (body, where, problems) {
  const block = blockOf(body)
  say(`  ${where}: ${JSON.stringify(block)}`)
  for (const s of [DEPLOY, PORT]) if (!block.includes(ids[s])) problems.push(`${where}: the block lacks ${JSON.stringify(s)} (${ids[s]})`)
  if (/which branch do we deploy from/i.test(block)) problems.push(`${where}: the question is in the block`)
}

test('a compound question asked again keeps both answers in the first request\'s block; the question is never stored', async () => {
  const problems = []
  holdsBoth(await ask(ASKED), 'session 2, the first asking', problems)
  await ask(MARK)
  const notes = await stored([MARK])
  assert.ok(notes.some((e) => e.statement === MARK), 'the capture after the question is stored')
  if (notes.some((e) => e.statement === ASKED)) problems.push('the question was stored as a note')
  await warm(service.api)
  holdsBoth(await ask(ASKED), 'session 3, asked again', problems)
  assert.deepEqual(problems, [])
})

test('dsh web: the overview lists the port fact and the prompt that asks for it gets the note; the compound question twice in one session keeps both; then /plur capture off and a private sentence', { skip: browserMissing && `no chromium at ${CHROMIUM}` }, async () => {
  assert.equal((await run(install.dsh, ['plugin', '--profile', 'web', 'add', './hosts/dsh'], { cwd: clone, env })).code, 0)
  const { server, url } = await startDshWeb(install.dsh, { cwd: clone, env })
  const browser = await launchChromium(CHROMIUM)
  try {
    const page = await browser.newPage()
    page.setDefaultTimeout(120000)
    await page.goto(url, { waitUntil: 'networkidle' })
    await page.getByRole('button', { name: 'Continue' }).click()
    // the repository is a known workspace already (the headless sessions ran in it): pick it from the list
    await page.getByRole('button', { name: 'Choose workspace' }).click()
    await page.getByRole('menuitem', { name: 'shop', exact: true }).click()
    await page.locator('textarea').waitFor()
    const send = async (text) => {
      await page.locator('textarea').fill(text)
      await page.getByRole('button', { name: 'Send message' }).click()
    }
    const asked = {}
    const turn = async (text) => {
      asked[text] = (asked[text] ?? 0) + 1
      const before = model.requests.length
      await send(text)
      await page.getByText(`Answer ${asked[text]} to: ${text}`, { exact: true }).waitFor()
      return model.requests.slice(before).find((body) => body.tools?.length > 0 && turnOf(body, TYPED).question === text)
    }
    const problems = []   // collected: the session goes on to /plur capture off whatever the blocks hold
    const hi = blockOf(await turn(HI))
    say(`  web "hi": ${JSON.stringify(hi)}`)
    if (!/dev server listens on port/.test(hi)) problems.push('the overview does not list the port fact')
    const port = blockOf(await turn(PORT_ASKED))
    say(`  web ${JSON.stringify(PORT_ASKED)}: ${JSON.stringify(port)}`)
    if (!(port.includes(ids[PORT]) && port.includes('5173'))) problems.push('the prompt that asks for the listed fact lacks the note')
    holdsBoth(await turn(ASKED), 'web, the compound question', problems)
    holdsBoth(await turn(ASKED), 'web, the compound question again', problems)
    await send('/plur capture off')
    await page.getByText(/^Capture off/).last().waitFor()
    await turn(PRIVATE)
    assert.deepEqual(problems, [])
  } finally {
    await browser.close()
    const exited = new Promise((resolve) => server.once('exit', resolve))
    server.kill('SIGTERM')
    const timer = setTimeout(() => server.kill('SIGKILL'), 15000)
    await exited
    clearTimeout(timer)
  }
})

test('`plur ingest` of the DSH home into the same plur home: the sentence typed with capture off is not stored; what capture stored is not stored twice', { skip: browserMissing && 'the capture-off turn is typed in dsh web' }, async () => {
  const ingest = (home, ...args) => JSON.parse(execFileSync(PYTHON, ['-m', 'plur', '--home', home, 'ingest', env.DSH_HOME, '--json', ...args], { env: plurEnv, encoding: 'utf8' }))
  // the session log holds it: a home with no marks would store it
  const fresh = join(work, 'plur-fresh')
  await mkdir(fresh)
  const preview = ingest(fresh, '--dry-run').preview.map((e) => e.statement)
  assert.ok(preview.includes(PRIVATE), `the DSH session log holds the sentence typed with capture off (${JSON.stringify(preview)})`)
  const got = ingest(service.home)
  say(`  plur ingest ${env.DSH_HOME}: added ${got.added.length}, left out ${JSON.stringify(got.left_out)}, ${got.skipped} already ingested`)
  const notes = (await service.api.request('POST', '/list', { limit: 200 })).engrams
  assert.ok(!notes.some((e) => e.statement === PRIVATE), 'the sentence typed with capture off is not stored')
  assert.ok((got.left_out?.off ?? 0) >= 1, 'and the report counts it')
  for (const s of [DEPLOY, PORT, MARK]) assert.equal(notes.filter((e) => e.statement === s).length, 1, `${JSON.stringify(s)} once`)
  assert.ok(!notes.some((e) => e.statement === ASKED), 'the question is not ingested either')
})
