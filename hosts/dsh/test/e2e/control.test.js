// What a DSH user controls, in the real `dsh` CLI (0.1.0-rc.8, installed as the README says) against a
// recording fake model and real plur processes: the model's plur_update / plur_show / plur_list (another
// project's id refused at each), a service started by the plugin when none runs, memory that says it is
// off (and why) when it cannot start one, DSH's settings document switching memory off and on, and
// `plur ingest` of the DSH session folder these very runs wrote.
//
// `npm run e2e` in hosts/dsh (runs this file after dsh.test.js). $PLUR_E2E_OUT: requests-control.jsonl.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { PlurClient } from '../../src/client.js'
import { PYTHON, startPlur, warm } from '../support/plur.js'
import { ensureInstalled, launchChromium, PKG, run, startDshWeb } from './install.js'
import { contentText, startModel, systemOf, turnOf } from './model.js'

const Q = {
  update: 'Change the tabs note to 2 spaces.',
  show: 'Show me the tabs note in full.',
  list: 'List what you remember about kappa.',
  other: 'Change the omega note, show it, and forget it.',
  dog: 'What is my dog called?',
  sister: 'My sister Lena moved to Vienna last spring.',
  where: 'Where does my sister live now?',
  dogAgain: 'And my dog, what is it called?',
}
let work, install, service, model, clone, projectDir, tabsId, omegaId
const log = []
const say = (line) => { log.push(line); console.log(line) }
// Tool calls the model makes, per question: each call is answered, then the next one is made.
const calls = () => ({
  [Q.update]: [{ name: 'plur_update', arguments: { id: tabsId, statement: 'KAPPA-tabs: kappa indents with 2 spaces.', tags: ['style'] } }],
  [Q.show]: [{ name: 'plur_show', arguments: { id: tabsId } }],
  [Q.list]: [{ name: 'plur_list', arguments: { text: 'kappa', limit: 10 } }],
  [Q.other]: [
    { name: 'plur_update', arguments: { id: omegaId, statement: 'hijacked' } },
    { name: 'plur_show', arguments: { id: omegaId } },
    { name: 'plur_forget', arguments: { id: omegaId } },
  ],
})
const script = (body) => {
  if (!(body.tools?.length > 0)) return { text: 'Session title' }
  const { question, toolResults } = turnOf(body, Object.values(Q))
  const planned = calls()[question] ?? []
  if (toolResults < planned.length) return { toolCall: planned[toolResults] }
  return { text: question === undefined ? 'ok' : `Answer to: ${question}` }
}

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'plur-e2e-control-'))
  install = await ensureInstalled(say)
  const { out: packed } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: PKG })
  clone = join(work, 'clone')
  for (const { path } of JSON.parse(packed)[0].files) await cp(join(PKG, path), join(clone, 'hosts', 'dsh', path), { recursive: true })
  const home = join(work, 'plur')
  await mkdir(home)
  service = await startPlur(home)
  tabsId = (await service.api.request('POST', '/learn', { statement: 'KAPPA-tabs: kappa indents with tabs.', scope: 'project:kappa' })).engram.id
  omegaId = (await service.api.request('POST', '/learn', { statement: 'OMEGA-db: omega stores orders in DynamoDB.', scope: 'project:omega' })).engram.id
  await service.api.request('POST', '/learn', { statement: 'DOG-name: Lin\'s dog is called Biscuit, a beagle.', scope: 'global' })
  await warm(service.api)
  model = await startModel({ script })
  projectDir = join(work, 'projects', 'kappa')
  await mkdir(projectDir, { recursive: true })
})

after(async () => {
  if (process.env.PLUR_E2E_OUT) await writeFile(join(process.env.PLUR_E2E_OUT, 'transcript-control.txt'), log.join('\n') + '\n')
  await model?.close()
  await service?.stop()
  if (work !== undefined) await rm(work, { recursive: true, force: true })
})

/** A DSH home with the plugin added to the headless profile, and its environment; `config` is the plugin row's. */
async function profile (name, { plurHome = service.home, config } = {}) {
  const root = join(work, name)
  await mkdir(join(root, 'home'), { recursive: true })
  const env = {
    ...install.env, HOME: join(root, 'home'), DSH_HOME: join(root, 'dsh'), PLUR_HOME: plurHome, HF_HUB_OFFLINE: '1',
    DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'sk-e2e-not-a-key', DSH_TELEMETRY_DISABLED: '1',
    // capture has its own e2e (capture.test.js); these runs ask some questions twice, which capture would
    // store: off, the way a headless user turns it off without YAML (PLUR_CAPTURE in dsh's environment)
    PLUR_CAPTURE: 'off',
  }
  await mkdir(env.DSH_HOME, { recursive: true })
  assert.equal((await dsh(['plugin', '--profile', 'headless', 'add', './hosts/dsh'], { cwd: clone, env })).code, 0)
  if (config !== undefined) await writeFile(join(env.DSH_HOME, 'profiles', 'headless', 'cordis.patch.yml'), `- id: plur\n  config: ${JSON.stringify(config)}\n`)
  return env
}

async function dsh (args, { cwd, env }) {
  const result = await run(install.dsh, args, { cwd, env, timeoutMs: 10 * 60000 }).catch((error) => error)
  say(`$ dsh ${args.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ')}   (exit ${result.code}, ${(result.ms / 1000).toFixed(1)} s)`)
  return result
}

/** One headless task; the agent's model requests (title requests left out). */
async function ask (question, env) {
  const before = model.requests.length
  const result = await dsh(['--profile', 'headless', question], { cwd: projectDir, env })
  assert.equal(result.code, 0, `dsh exited ${result.code}:\n${result.err}`)
  const agent = model.requests.slice(before).filter((body) => body.tools?.length > 0)
  for (const body of agent) say(`  request: block ${JSON.stringify((/<plur-memory>[\s\S]*<\/plur-memory>/.exec(systemOf(body))?.[0] ?? '').slice(0, 160))}, ${body.tools.filter((t) => t.function?.name.startsWith('plur_')).length} plur tools`)
  return { result, agent, first: agent[0], toolResults: (agent.at(-1)?.messages ?? []).filter((m) => m.role === 'tool').map(contentText) }
}

const blockOf = (body) => /<plur-memory>[\s\S]*<\/plur-memory>/.exec(systemOf(body))?.[0] ?? ''

let env
test('the model calls plur_update, plur_show and plur_list through the real dsh; the store shows the change', async () => {
  env = await profile('tools')
  const update = await ask(Q.update, env)
  assert.match(update.toolResults[0], new RegExp(`^Updated \\[${tabsId}\\] \\(fact, project:kappa tags=style\\) KAPPA-tabs: kappa indents with 2 spaces\\.`))
  const stored = (await service.api.request('GET', `/engrams/${tabsId}`)).engram
  assert.equal(stored.statement, 'KAPPA-tabs: kappa indents with 2 spaces.')
  assert.deepEqual(stored.tags, ['style'])
  const show = await ask(Q.show, env)
  assert.match(show.toolResults[0], new RegExp(`^\\[${tabsId}\\] KAPPA-tabs: kappa indents with 2 spaces\\.\\ntype: fact\\nscope: project:kappa`))
  const list = await ask(Q.list, env)
  assert.match(list.toolResults[0], /KAPPA-tabs/)
  assert.doesNotMatch(list.toolResults[0], /OMEGA/)
})

test('another project\'s id is refused at plur_update, plur_show and plur_forget; the note is untouched', async () => {
  const other = await ask(Q.other, env)
  assert.equal(other.toolResults.length, 3)
  for (const text of other.toolResults) assert.match(text, /no engram .* in this agent's scope project:kappa \(or global\)/)
  const omega = (await service.api.request('GET', `/engrams/${omegaId}`)).engram
  assert.equal(omega.statement, 'OMEGA-db: omega stores orders in DynamoDB.')
})

test('DSH\'s settings document switches memory off (no block, no plur tools) and on again', async () => {
  const settings = join(env.DSH_HOME, 'settings.yaml')
  await writeFile(settings, 'plur:\n  enabled: false\n  capture: \'off\'\n')
  const off = await ask(Q.dog, env)
  assert.equal(blockOf(off.first), '', 'no block')
  assert.deepEqual(off.first.tools.map((t) => t.function?.name).filter((n) => n.startsWith('plur_')), [], 'no plur tools')
  await writeFile(settings, 'plur:\n  enabled: true\n  capture: \'off\'\n')
  const on = await ask(Q.dog, env)
  assert.match(blockOf(on.first), /Biscuit/)
  assert.equal(on.first.tools.filter((t) => t.function?.name.startsWith('plur_')).length, 8)
})

test('two plugin rows in one profile (a personal-only one beside the project one, as docs/hosts/dsh.md shows): the first request carries both blocks', async () => {
  const two = await profile('two-mounts')
  await writeFile(join(two.DSH_HOME, 'profiles', 'headless', 'cordis.patch.yml'), "- insert:\n    - id: plur-personal\n      name: '@plur-ai/dsh'\n      config:\n        scope: global\n")
  const asked = await ask('What is my dog called, and how does kappa indent?', two)
  const blocks = systemOf(asked.first).match(/<plur-memory>[\s\S]*?<\/plur-memory>/g) ?? []
  say(`  two mounts: ${blocks.length} blocks: ${JSON.stringify(blocks.map((b) => b.slice(0, 400)))}`)
  assert.equal(blocks.length, 2, 'plur:memory and plur:memory:2')
  assert.match(blocks[0], /KAPPA-tabs/, 'the project block')
  assert.match(blocks[1], /Biscuit/, 'the personal block')
  assert.doesNotMatch(blocks[1], /KAPPA-tabs/, 'personal-only: no project note')
  assert.equal(asked.first.tools.filter((t) => t.function?.name.startsWith('plur_')).length, 8, 'the tools once')
})

test('no service running: the first headless run starts one (plurCommand), the next run\'s first request carries the block', async () => {
  const home = join(work, 'plur-cold')
  await mkdir(home)
  execFileSync(PYTHON, ['-m', 'plur', '--home', home, 'learn', 'DOG-name: Lin\'s dog is called Biscuit, a beagle.'], { env: { ...process.env, HF_HUB_OFFLINE: '1', PLUR_AUTOSTART_SERVICE: '0' } })
  const cold = await profile('cold', { plurHome: home, config: { plurCommand: [PYTHON, '-m', 'plur'], waitMs: 20000 } })
  try {
    const first = await ask(Q.dog, cold)
    assert.match(blockOf(first.first), /^<plur-memory>\nplur memory is starting: the plur service was not running, so this session started it \(.*\); memory shows from the next turn\n<\/plur-memory>$/)
    const api = new PlurClient({ home, timeoutMs: 60000 })
    const deadline = Date.now() + 240000
    for (;;) {
      try { await api.request('GET', '/status'); break } catch (error) {
        if (Date.now() > deadline) throw new Error(`the service the plugin started never answered: ${error.message}`)
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
    }
    await warm(api)
    const next = await ask(Q.dog, cold)
    assert.match(blockOf(next.first), /DOG-name: Lin's dog is called Biscuit/)
  } finally {
    try { execFileSync(PYTHON, ['-m', 'plur', '--home', home, 'service', 'stop'], { env: { ...process.env, HF_HUB_OFFLINE: '1' } }) } catch {}
  }
})

test('plurCommand pointing nowhere: the first request\'s block says memory is off and why', async () => {
  const home = join(work, 'plur-none')
  await mkdir(home)
  const none = await profile('none', { plurHome: home, config: { plurCommand: '/nowhere/bin/plur' } })
  const { first, result } = await ask(Q.dog, none)
  assert.match(blockOf(first), /^<plur-memory>\nplur memory is off: the plur service is not running and could not be started with \/nowhere\/bin\/plur .* \(cannot run "\/nowhere\/bin\/plur" \(ENOENT: not found\)\); set the plugin's plurCommand to the plur program, or run `plur service start`\n<\/plur-memory>$/)
  say(`  dsh stderr lines naming plur: ${JSON.stringify(result.err.split('\n').filter((l) => /plur/.test(l)).slice(0, 3))} (rc.8 headless prints no plugin log lines)`)
})

test('`plur ingest` of the DSH home these runs wrote: a user turn is recalled in a new session\'s first block', async () => {
  await ask(Q.sister, env)
  const home = join(work, 'plur-ingest')
  await mkdir(home)
  const ingest = (dir) => JSON.parse(execFileSync(PYTHON, ['-m', 'plur', '--home', home, 'ingest', dir, '--json'], { env: { ...process.env, HF_HUB_OFFLINE: '1', PLUR_AUTOSTART_SERVICE: '0' }, encoding: 'utf8' }))
  const first = ingest(env.DSH_HOME)
  say(`  plur ingest ${env.DSH_HOME}: ${first.added.length} turns added from ${first.files?.length ?? '?'} files`)
  // turns that only ask are left out, as capture leaves them out (issue 46): they count with the added ones
  assert.ok(first.added.length + (first.left_out?.question ?? 0) >= 6, 'every user turn of the sessions above')
  assert.ok(first.added.length >= 3, 'the turns that say something')
  assert.deepEqual(ingest(env.DSH_HOME).added, [], 'idempotent')
  const ingested = await startPlur(home)
  try {
    await warm(ingested.api)
    const recall = await ingested.api.request('POST', '/list', { text: 'Lena', limit: 5 })
    // a turn about the user: ingest sends it to global, as capture does (route_personal); recalled in every project
    assert.deepEqual(recall.engrams.map((e) => [e.statement, e.scope, e.source.format]), [[Q.sister, 'global', 'dsh']])
    const fresh = await profile('after-ingest', { plurHome: home })
    const where = await ask(Q.where, fresh)
    assert.match(blockOf(where.first), /My sister Lena moved to Vienna last spring\./)
  } finally {
    await ingested.stop()
  }
})

const CHROMIUM = process.env.PLUR_CHROMIUM ?? '/usr/bin/chromium'
const browserMissing = !existsSync(CHROMIUM) && process.env.PLUR_REQUIRE_BROWSER !== '1'
test('`dsh web` in a real browser: the plur card in Settings > Plugins shows the service state and address, switches memory off (next request: no block, no plur tools; the card says off) and on again; /plur list, /plur url, /plur projects, /plur export answer', { skip: browserMissing && `no chromium at ${CHROMIUM}` }, async () => {
  const web = await profile('web')
  const probe = join(work, 'probe-web.jsonl')
  web.PLUR_E2E_PROBE = probe
  assert.equal((await dsh(['plugin', '--profile', 'web', 'add', './hosts/dsh'], { cwd: clone, env: web })).code, 0)
  assert.equal((await dsh(['plugin', '--profile', 'web', 'add', join(PKG, 'test', 'e2e', 'probe')], { cwd: clone, env: web })).code, 0)
  await writeFile(join(web.DSH_HOME, 'profiles', 'web', 'cordis.patch.yml'), '- id: plur\n  config:\n    waitMs: 20000\n    turnWaitMs: 20000\n    timeoutMs: 20000\n')
  await mkdir(join(web.HOME, 'kappa'))
  // a second folder named kappa is its own project (kappa-2) unless bound to the first one's
  execFileSync(PYTHON, ['-m', 'plur', '--home', service.home, 'project', 'bind', join(web.HOME, 'kappa'), '--to', 'project:kappa'], { env: { ...process.env, PLUR_AUTOSTART_SERVICE: '0' } })
  const settingsEvents = async () => (await readFile(probe, 'utf8').catch(() => '')).split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((e) => e.event === 'settings')
  const { server, url } = await startDshWeb(install.dsh, { cwd: clone, env: web })
  const browser = await launchChromium(CHROMIUM)
  try {
    const page = await browser.newPage()
    page.setDefaultTimeout(120000)
    await page.goto(url, { waitUntil: 'networkidle' })
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.getByRole('button', { name: 'Choose workspace' }).click()
    await page.getByText('kappa', { exact: true }).click()
    await page.getByRole('button', { name: 'Open' }).click()
    const send = async (text) => {
      await page.locator('textarea').fill(text)
      await page.getByRole('button', { name: 'Send message' }).click()
    }
    const turn = async (question) => {
      const before = model.requests.length
      await send(question)
      await page.getByText(`Answer to: ${question}`, { exact: true }).last().waitFor()
      return model.requests.slice(before).find((body) => body.tools?.length > 0 && turnOf(body, [question]).question === question)
    }
    const plurTools = (body) => body.tools.map((t) => t.function?.name).filter((n) => n.startsWith('plur_'))
    const on = await turn(Q.dog)
    assert.match(blockOf(on), /Biscuit/)
    assert.equal(plurTools(on).length, 8)
    // Settings > Plugins > Plugin configuration: the plur card (src/web-card.js), bound to the plur namespace
    const settings = join(web.DSH_HOME, 'settings.yaml')
    // the card is built as DSH's own cards: a header that discloses the fields, staged edits, Save
    const card = page.locator('li[data-plur-card]')
    const switchTo = async (enabled) => {
      const seen = (await settingsEvents()).length
      await page.getByRole('button', { name: 'Settings' }).first().click()
      await page.getByRole('button', { name: 'Plugins' }).first().click()
      await card.getByRole('button', { name: 'Expand: plur memory', exact: true }).click()
      const line = card.locator('[data-plur-service]')
      if (enabled) {   // it is off now: the card says so, never "Service: running"
        await card.locator('[data-plur-service="off"]').waitFor()
        assert.match(await line.innerText(), /^Memory is off: no notes and no plur_\* tools in any request/)
        assert.equal(await card.locator('[data-plur-pill]').innerText(), 'Off')
        assert.doesNotMatch(await card.innerText(), /Service: running/)
      } else {
        const state = card.getByText(/^Service: running at http:\/\/127\.0\.0\.1:\d+ \(plur \S+, \d+ notes\)$/)
        await state.waitFor()
        assert.ok((await state.innerText()).includes(service.info.url.replace(/\/+$/, '')), 'the card shows the service\'s state and address')
        assert.equal(await card.locator('[data-plur-pill]').innerText(), 'On')
      }
      await card.getByLabel('plur memory', { exact: true }).selectOption(enabled ? 'on' : 'off')
      assert.equal(await card.getByText('Unsaved', { exact: true }).count(), 1, 'a staged edit is marked, as on DSH\'s cards')
      await card.getByRole('button', { name: 'Save', exact: true }).click()
      const deadline = Date.now() + 60000
      while (!(await settingsEvents()).slice(seen).some((e) => e.enabled === enabled)) {
        if (Date.now() > deadline) throw new Error(`the host never applied plur.enabled=${enabled} within 60 s`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      assert.match(await readFile(settings, 'utf8'), new RegExp(`plur:[\\s\\S]*enabled: ${enabled}`), 'kept in the user\'s settings document')
      await card.locator(`[data-plur-pill="${enabled ? 'on' : 'off'}"]`).waitFor()
      if (!enabled) {
        await card.locator('[data-plur-service="off"]').waitFor()
        assert.doesNotMatch(await card.innerText(), /Service: running/, 'memory off is shown as off')
      }
      say(`  web settings: plur memory ${enabled ? 'on' : 'off'} through the card (${JSON.stringify(await line.innerText())}); settings.yaml ${JSON.stringify(await readFile(settings, 'utf8'))}`)
      if (process.env.PLUR_E2E_OUT) await page.screenshot({ path: join(process.env.PLUR_E2E_OUT, `card-${enabled ? 'on' : 'off'}.png`) })
      await page.getByRole('button', { name: 'Close', exact: true }).click()
      await card.waitFor({ state: 'detached' })
    }
    await switchTo(false)
    const off = await turn(Q.show)
    assert.equal(blockOf(off), '', 'memory off: no block')
    assert.deepEqual(plurTools(off), [], 'memory off: no plur tools')
    await switchTo(true)
    const back = await turn(Q.dogAgain)
    assert.match(blockOf(back), /Biscuit/, 'on again: the block')
    assert.equal(plurTools(back).length, 8, 'on again: the tools')
    for (const [line, answer] of [
      ['/plur projects', /project:kappa: \d+ engrams? \(this session\)/],
      ['/plur list', /KAPPA-tabs/],
      ['/plur url', /plur's pages \(this link logs your browser in; keep it to yourself\): http:\/\/127\.0\.0\.1:\d+\/w\/[\w-]+\/\?login=\d+\./],
      ['/plur export', /Exported \d+ notes? to \S+\/kappa\/plur-export-\d{4}-\d{2}-\d{2}\.jsonl\./],
    ]) {
      await send(line)
      await page.getByText(answer).last().waitFor()
      say(`  web ${line}: ${JSON.stringify((await page.getByText(answer).last().innerText()).slice(0, 120))}`)
    }
    // /plur export wrote every note, through the service, into the session's folder
    const exported = /Exported \d+ notes? to (\S+\.jsonl)\./.exec(await page.getByText(/Exported \d+ notes? to/).last().innerText())[1]
    assert.ok(exported.startsWith(join(web.HOME, 'kappa')), exported)
    const rows = (await readFile(exported, 'utf8')).trim().split('\n').map((l) => JSON.parse(l))
    assert.ok(rows.some((r) => r.id === tabsId && r.scope === 'project:kappa'), 'the kappa note, with its scope')
    assert.ok(rows.some((r) => r.scope === 'project:omega'), 'every note: another project\'s too')
  } finally {
    await browser.close()
    const exited = new Promise((resolve) => server.once('exit', resolve))
    server.kill('SIGTERM')
    const timer = setTimeout(() => server.kill('SIGKILL'), 15000)
    await exited
    clearTimeout(timer)
  }
})
