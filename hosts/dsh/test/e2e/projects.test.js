// One project identity in the real `dsh` CLI (0.1.0-rc.8, installed as the README says): four headless
// sessions, each started in another folder that the old basename rule could not tell apart (a CJK-named
// repository, filed under `global` before; a package folder nested in a monorepo, `project:web` before; two
// clones both named `app`, one `project:app` before). A note sits in each folder's project; the first model
// request of each session carries its own folder's note and none of the other three's. The plugin registers
// each workspace's root in the home through the service, as plur's own doors do.
//
// `npm run e2e` in hosts/dsh (after dsh.test.js and control.test.js).
import assert from 'node:assert/strict'
import { cp, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { startPlur, warm } from '../support/plur.js'
import { ensureInstalled, PKG, run } from './install.js'
import { startModel, systemOf } from './model.js'

const QUESTION = 'Which host runs the cache server?'
let work, install, service, model, clone, env
const folders = {}
const ids = {}
const log = []
const say = (line) => { log.push(line); console.log(line) }

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'plur-e2e-projects-'))
  install = await ensureInstalled(say)
  const { out: packed } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: PKG })
  clone = join(work, 'clone')
  for (const { path } of JSON.parse(packed)[0].files) await cp(join(PKG, path), join(clone, 'hosts', 'dsh', path), { recursive: true })
  const tree = join(work, 'tree')
  Object.assign(folders, { cjk: join(tree, '我的项目', '源代码'), nested: join(tree, 'mono', 'packages', 'web'), one: join(tree, 'one', 'app'), two: join(tree, 'two', 'app') })
  for (const repo of [join(tree, '我的项目'), join(tree, 'mono'), folders.one, folders.two]) await mkdir(join(repo, '.git'), { recursive: true })
  for (const folder of Object.values(folders)) await mkdir(folder, { recursive: true })
  const home = join(work, 'plur')
  await mkdir(home)
  service = await startPlur(home)
  const scopes = { cjk: 'project:我的项目', nested: 'project:mono', one: 'project:app', two: 'project:app-2' }
  for (const [k, scope] of Object.entries(scopes)) ids[k] = (await service.api.request('POST', '/learn', { statement: `IDENT-${k}: the cache server runs on host cache-${k}.`, scope })).engram.id
  await warm(service.api)
  model = await startModel({ script: (body) => ({ text: body.tools?.length > 0 ? 'Answer: see memory.' : 'Session title' }) })
  const root = join(work, 'dsh-user')
  await mkdir(join(root, 'home'), { recursive: true })
  env = {
    ...install.env, HOME: join(root, 'home'), DSH_HOME: join(root, 'dsh'), PLUR_HOME: home, HF_HUB_OFFLINE: '1',
    DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'sk-e2e-not-a-key', DSH_TELEMETRY_DISABLED: '1',
  }
  const added = await run(install.dsh, ['plugin', '--profile', 'headless', 'add', './hosts/dsh'], { cwd: clone, env, timeoutMs: 10 * 60000 })
  assert.equal(added.code, 0)
})

after(async () => {
  await model?.close()
  await service?.stop()
  if (work !== undefined) await rm(work, { recursive: true, force: true })
})

test('the CJK folder, a nested package folder and two clones named app are four projects in real dsh sessions', async () => {
  // first come keeps the plain name: clone one is `app` (registered now, as a door would), clone two `app-2`
  assert.equal((await service.api.request('POST', '/project', { folder: folders.one })).scope, 'project:app')
  for (const [k, folder] of Object.entries(folders)) {
    const before = model.requests.length
    const result = await run(install.dsh, ['--profile', 'headless', QUESTION], { cwd: folder, env, timeoutMs: 10 * 60000 })
    assert.equal(result.code, 0, result.err)
    const first = model.requests.slice(before).find((body) => body.tools?.length > 0)
    assert.ok(first, `${k}: a model request`)
    const block = /<plur-memory>[\s\S]*<\/plur-memory>/.exec(systemOf(first))?.[0] ?? ''
    say(`${k} (${folder}): block ${JSON.stringify(block.slice(0, 200))}`)
    assert.match(block, new RegExp(`IDENT-${k}:`), `${k}: its own project's note is in the first request`)
    for (const other of Object.keys(folders).filter((o) => o !== k)) assert.doesNotMatch(block, new RegExp(`IDENT-${other}:`), `${k}: ${other}'s note stays out`)
  }
  const { roots } = JSON.parse(await readFile(join(service.home, 'projects.json'), 'utf8'))
  assert.deepEqual(Object.values(roots).sort(), ['project:app', 'project:app-2', 'project:mono', 'project:我的项目'], 'every workspace root registered')
})
