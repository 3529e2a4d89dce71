// A new DSH user's first message, and facts about the user across projects, in the real `dsh` CLI
// (0.1.0-rc.8) against a recording fake model and the plur service the plugin itself starts (plurCommand):
//
// 1. no service runs: the first headless run (which starts it) still stores its typed message;
// 2. a personal fact said in repo A is in the first model request of a session in repo B; a project fact
//    said in repo A is not (capture stores facts about the user in global, the rest in the project).
//
// `npm run e2e` in hosts/dsh; this file alone: node --test test/e2e/first-run.test.js
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { PlurClient } from '../../src/client.js'
import { PYTHON, warm } from '../support/plur.js'
import { ensureInstalled, PKG, run } from './install.js'
import { startModel, systemOf } from './model.js'

const PERSONAL = 'My daughter Mira has violin lessons every Thursday.'
const PROJECT = 'The web package\'s dev server listens on port 5173.'
const ASKED = 'When does Mira have violin lessons, and which port does the dev server listen on?'
let work, install, model, clone, env, home, api
const repos = {}
const say = (line) => console.log(line)
const plurEnv = { ...process.env, HF_HUB_OFFLINE: '1', PLUR_AUTOSTART_SERVICE: '0' }

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'plur-e2e-first-'))
  install = await ensureInstalled(say)
  const { out: packed } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: PKG })
  clone = join(work, 'clone')
  for (const { path } of JSON.parse(packed)[0].files) await cp(join(PKG, path), join(clone, 'hosts', 'dsh', path), { recursive: true })
  for (const name of ['alpha', 'beta']) {
    repos[name] = join(work, 'repos', name)
    await mkdir(join(repos[name], '.git'), { recursive: true })
  }
  home = join(work, 'plur')
  await mkdir(home)
  // a home with a note and no service running: the plugin starts one on the first run
  execFileSync(PYTHON, ['-m', 'plur', '--home', home, 'learn', '--scope', 'global', 'The office plants are watered on Fridays.'], { env: plurEnv })
  api = new PlurClient({ home, timeoutMs: 60000 })
  model = await startModel({ script: (body) => ({ text: body.tools?.length > 0 ? 'ok' : 'Session title' }) })
  const root = join(work, 'dsh-user')
  await mkdir(join(root, 'home'), { recursive: true })
  env = {
    ...install.env, HOME: join(root, 'home'), DSH_HOME: join(root, 'dsh'), PLUR_HOME: home, HF_HUB_OFFLINE: '1',
    DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'sk-e2e-not-a-key', DSH_TELEMETRY_DISABLED: '1',
  }
  assert.equal((await run(install.dsh, ['plugin', '--profile', 'headless', 'add', './hosts/dsh'], { cwd: clone, env, timeoutMs: 10 * 60000 })).code, 0)
  await writeFile(join(env.DSH_HOME, 'profiles', 'headless', 'cordis.patch.yml'), `- id: plur\n  config: ${JSON.stringify({ plurCommand: [PYTHON, '-m', 'plur'], waitMs: 20000, turnWaitMs: 20000, timeoutMs: 20000 })}\n`)
})

after(async () => {
  try { execFileSync(PYTHON, ['-m', 'plur', '--home', home, 'service', 'stop'], { env: plurEnv }) } catch {}
  await model?.close()
  if (work !== undefined) await rm(work, { recursive: true, force: true })
})

/** One headless task in `cwd`; the agent's first model request (title requests left out). */
async function ask (text, cwd) {
  const before = model.requests.length
  const result = await run(install.dsh, ['--profile', 'headless', text], { cwd, env, timeoutMs: 10 * 60000 }).catch((error) => error)
  say(`$ dsh --profile headless ${JSON.stringify(text)} (in ${cwd}): exit ${result.code}, ${(result.ms / 1000).toFixed(1)} s`)
  assert.equal(result.code, 0, `dsh exited ${result.code}:\n${result.err}`)
  return { result, first: model.requests.slice(before).find((body) => body.tools?.length > 0) }
}

const blockOf = (body) => /<plur-memory>[\s\S]*<\/plur-memory>/.exec(systemOf(body))?.[0] ?? ''

/** The captured notes (source kind conversation), once `n` are stored or the deadline passed. */
async function captured (n) {
  const deadline = Date.now() + 120000
  let found = []
  for (;;) {
    try { found = (await api.request('POST', '/list', { limit: 100 })).engrams.filter((e) => e.source?.kind === 'conversation') } catch {}
    if (found.length >= n || Date.now() > deadline) return found
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

test('no service running: the first headless run starts it and its typed message is stored', async () => {
  const { first } = await ask(PERSONAL, repos.alpha)
  assert.match(blockOf(first), /plur memory is starting/, 'the run that starts the service')
  // the run ends once the service took the turn: it is there now, or the service's journal holds it
  const notes = await captured(1)
  say(`  captured: ${JSON.stringify(notes.map((e) => [e.scope, e.statement]))}`)
  assert.deepEqual(notes.map((e) => e.statement), [PERSONAL], 'the first message is stored')
})

test('a personal fact said in repo A is in repo B\'s first request; a project fact said in repo A is not', async () => {
  await ask(PROJECT, repos.alpha)
  const notes = await captured(2)
  say(`  captured: ${JSON.stringify(notes.map((e) => [e.scope, e.statement]))}`)
  assert.equal(notes.length, 2)
  assert.equal(notes.find((e) => e.statement === PROJECT)?.scope, 'project:alpha', 'the project fact stays in its project')
  assert.equal(notes.find((e) => e.statement === PERSONAL)?.scope, 'global', 'the personal fact follows the user')
  await warm(api)
  const { first } = await ask(ASKED, repos.beta)
  const block = blockOf(first)
  say(`  repo B's first block: ${JSON.stringify(block)}`)
  assert.match(block, /Mira has violin lessons every Thursday/, 'the personal fact reaches repo B')
  assert.doesNotMatch(block, /5173/, 'the project fact stays in repo A')
})
