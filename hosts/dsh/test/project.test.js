// The plugin's project resolver is plur's (plur/project/): both run the one table of folders in
// tests/data/project_identity.json (CJK, emoji, spaces, nested package folders, worktrees, two
// clones of one name, bound folders, `/`), so a DSH session and a Claude Code hook in the same
// folder file notes under the same scope.
import './support/es2024.js'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative } from 'node:path'
import { after, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import plur, { resolveConfig } from '../src/index.js'
import { findProject, loadRegistry, resolveProject } from '../src/project.js'
import { scopeFor } from '../src/scope.js'
import { bootHost, memorySection, nextRefresh } from './support/host.js'
import { removeHome, startPlur, tempHome, warm } from './support/plur.js'

const TABLE = JSON.parse(readFileSync(fileURLToPath(new URL('../../../tests/data/project_identity.json', import.meta.url)), 'utf8'))
const base = realpathSync(mkdtempSync(join(tmpdir(), 'plur-identity-')))
after(() => rmSync(base, { recursive: true, force: true }))

/** The table's tree, made exactly as tests/project_tree.py makes it. */
function build (root) {
  for (const item of TABLE.tree) {
    if (item.dir !== undefined) mkdirSync(join(root, item.dir), { recursive: true })
    else if (item.git !== undefined) mkdirSync(join(root, item.git, '.git'), { recursive: true })
    else if (item.worktree !== undefined) {
      const gitdir = join(root, item.of, '.git', 'worktrees', basename(item.worktree))
      mkdirSync(gitdir, { recursive: true })
      writeFileSync(join(gitdir, 'commondir'), '../..\n')
      const tree = join(root, item.worktree)
      mkdirSync(tree, { recursive: true })
      writeFileSync(join(tree, '.git'), `gitdir: ${item.relative ? relative(tree, gitdir) : gitdir}\n`)
      const back = join(tree, '.git') // the backlink git writes: the repository lists this worktree
      writeFileSync(join(gitdir, 'gitdir'), `${item.relative ? relative(gitdir, back) : back}\n`)
    } else if (item.file !== undefined) {
      mkdirSync(dirname(join(root, item.file)), { recursive: true })
      writeFileSync(join(root, item.file), item.text)
    } else if (item.submodule !== undefined) {
      const name = basename(item.submodule)
      mkdirSync(join(root, item.in, '.git', 'modules', name), { recursive: true })
      mkdirSync(join(root, item.submodule), { recursive: true })
      const depth = relative(item.in, item.submodule).split('/').length
      writeFileSync(join(root, item.submodule, '.git'), `gitdir: ${'../'.repeat(depth)}.git/modules/${name}\n`)
    }
  }
}

const abs = (rel, isAbsolute = false) => (isAbsolute ? rel : join(base, rel))
const expected = (c) => c.scope ?? 'project:folder-' + createHash('sha256').update(abs(c.scope_hash_of, c.absolute).normalize('NFC'), 'utf8').digest('hex').slice(0, 8)

build(base)
const home = join(base, 'plur-home')
mkdirSync(home)
const map = (m) => Object.fromEntries(Object.entries(m).map(([k, v]) => [abs(k), v]))
writeFileSync(join(home, 'projects.json'), JSON.stringify({ version: 1, roots: map(TABLE.registry.roots), bound: map(TABLE.registry.bound) }))

for (const c of TABLE.cases) {
  test(`identity table: ${c.name}`, () => {
    const got = findProject(abs(c.folder, c.absolute), loadRegistry(home))
    assert.deepEqual({ scope: got.scope, root: got.root, how: got.how }, { scope: expected(c), root: abs(c.root, c.absolute), how: c.how })
    assert.notEqual(got.scope, 'global')
  })
}

test('real git: a worktree from `git worktree add` joins its repository; its .git file copied elsewhere does not', () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'plur-realgit-')))
  try {
    const git = (...args) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { stdio: 'ignore' })
    git('init', '-q', join(dir, 'proj'))
    writeFileSync(join(dir, 'proj', 'f'), 'x')
    git('-C', join(dir, 'proj'), 'add', 'f')
    git('-C', join(dir, 'proj'), 'commit', '-qm', 'x')
    git('-C', join(dir, 'proj'), 'worktree', 'add', '-q', join(dir, 'feature'))
    mkdirSync(join(dir, 'feature', 'deep'))
    mkdirSync(join(dir, 'downloads', 'feature'), { recursive: true })
    writeFileSync(join(dir, 'downloads', 'feature', '.git'), readFileSync(join(dir, 'feature', '.git')))
    const empty = { roots: {}, bound: {} }
    assert.deepEqual([findProject(join(dir, 'feature', 'deep'), empty).root, findProject(join(dir, 'feature', 'deep'), empty).scope], [join(dir, 'proj'), 'project:proj'])
    assert.deepEqual([findProject(join(dir, 'downloads', 'feature'), empty).root, findProject(join(dir, 'downloads', 'feature'), empty).scope], [join(dir, 'downloads', 'feature'), 'project:feature'])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a projects.json over its 16 MiB cap is "too large", not "not valid JSON"', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plur-registry-'))
  try {
    writeFileSync(join(dir, 'projects.json'), '')
    truncateSync(join(dir, 'projects.json'), 16 * 1024 * 1024 + 1)
    const got = loadRegistry(dir)
    assert.deepEqual([got.roots, got.bound], [{}, {}])
    assert.match(got.error, /projects\.json is 16777217 bytes, too large/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('scopeFor gives a DSH session the project of its workspace (session.header.cwd)', () => {
  const agent = (cwd) => ({ session: { header: { cwd } } })
  assert.equal(scopeFor(agent(join(base, '我的项目', '源代码')), 'cwd', home), 'project:我的项目')
  assert.equal(scopeFor(agent(join(base, 'mono', 'packages', 'web', 'src')), 'cwd', home), 'project:mono')
  assert.equal(scopeFor(agent(join(base, 'clones', 'two', 'app')), 'cwd', home), 'project:app-2')
  assert.equal(resolveProject(join(base, 'backend', 'server'), home).scope, 'project:frontend')
  assert.equal(scopeFor(agent(join(base, 'code', 'web')), 'project:fixed', home), 'project:fixed')
  // a fixed scope of any script is valid config (the old ASCII-only pattern refused it), composed to NFC
  assert.equal(resolveConfig({ scope: 'project:我的项目' }).scope, 'project:我的项目')
  assert.equal(resolveConfig({ scope: 'project:Cafe\u0301' }).scope, 'project:Caf\u00e9')
  assert.throws(() => resolveConfig({ scope: 'project:🚀' }), /config\.scope "project:🚀" is invalid/)
})

test('in a real host with a real service: the CJK folder, a nested package folder and two clones named app are four projects; each agent sees its own note only, and the plugin registers its workspace', async () => {
  const home = await tempHome()
  const service = await startPlur(home)
  const host = await bootHost()
  try {
    const dirs = { cjk: join(base, '我的项目', '源代码'), nested: join(base, 'mono', 'packages', 'web', 'src'), one: join(base, 'clones', 'one', 'app'), two: join(base, 'clones', 'two', 'app') }
    // The clones register through the service's /project route, first come first served.
    assert.equal((await service.api.request('POST', '/project', { folder: dirs.two })).scope, 'project:app')
    assert.equal((await service.api.request('POST', '/project', { folder: dirs.one })).scope, 'project:app-2')
    const scopes = { cjk: 'project:我的项目', nested: 'project:mono', one: 'project:app-2', two: 'project:app' }
    const ids = {}
    for (const [k, scope] of Object.entries(scopes)) ids[k] = (await service.api.request('POST', '/learn', { statement: `IDENT-${k}: the ${k} cache server runs on host cache-${k}.`, scope })).engram.id
    await warm(service.api)
    await host.root.plugin(plur, { home, timeoutMs: 30000, waitMs: 30000, turnWaitMs: 30000 })
    for (const [k, dir] of Object.entries(dirs)) {
      const agent = (await host.createAgent(`agent-${k}`, dir)).agent
      const refreshed = nextRefresh(host.root, agent.id, 60000)
      await host.say(agent, 'Which host runs the cache server?')
      const refresh = await refreshed
      assert.equal(refresh.scope, scopes[k], `${k}: the project of ${dir}`)
      const block = memorySection(await host.assembleFor(agent))
      assert.match(block, new RegExp(`IDENT-${k}:`), `${k}: its own note is in the block`)
      for (const other of Object.keys(scopes).filter((o) => o !== k)) assert.doesNotMatch(block, new RegExp(`IDENT-${other}:`), `${k}: ${other}'s note stays out`)
    }
    const deadline = Date.now() + 60000
    let roots = {}
    while (Object.keys(roots).length < 4 && Date.now() < deadline) {
      roots = loadRegistry(home).roots
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.deepEqual(roots, { [join(base, '我的项目')]: 'project:我的项目', [join(base, 'mono')]: 'project:mono', [join(base, 'clones', 'one', 'app')]: 'project:app-2', [join(base, 'clones', 'two', 'app')]: 'project:app' })
  } finally {
    await host.close()
    await service.stop()
    await removeHome(home)
  }
})
