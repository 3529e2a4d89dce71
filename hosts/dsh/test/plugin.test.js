// The plugin's contract with the real DeepSeek Harness registries: what is registered and how
// (tools, /plur, the skill), optional services, disposal, config errors, scopes. Each test names
// the plugin-development trap it guards against (see the README's "DeepSeek Harness" section).
import './support/es2024.js'
import assert from 'node:assert/strict'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { renderSkillContent } from '@deepseek-ai/dsh-skill'
import SkillRegistry from '@deepseek-ai/dsh-skill'
import CommandRuntime from '@deepseek-ai/dsh-commands'
import ToolRuntime from '@deepseek-ai/dsh-tools'
import plur, { apply, latestUserText, resolveConfig, scopeFor, userText } from '../src/index.js'
import { neutraliseTemplate } from '../src/cache.js'
import { PlurClient } from '../src/client.js'
import { bootHost, memorySection, nextRefresh } from './support/host.js'
import { injectionsOf, removeHome, startPlur, tempHome, warm } from './support/plur.js'

const PIN = '0.1.0-rc.8'
const TOOLS = ['plur_feedback', 'plur_forget', 'plur_learn', 'plur_list', 'plur_recall', 'plur_show', 'plur_status', 'plur_update']
let home, service, host, delta

before(async () => {
  home = await tempHome()
  service = await startPlur(home)
  await service.api.request('POST', '/learn', { statement: 'Project delta DELTA-db: delta stores orders in SQLite.', scope: 'project:delta' })
  await service.api.request('POST', '/learn', { statement: 'Project omega OMEGA-db: omega stores orders in DynamoDB.', scope: 'project:omega' })
  await warm(service.api)
  host = await bootHost()
  await host.root.plugin(plur, { home, timeoutMs: 15000, waitMs: 15000, turnWaitMs: 15000 })
  const cwd = join(home, 'work', 'delta')
  await mkdir(cwd, { recursive: true })
  delta = (await host.createAgent('agent-delta', cwd)).agent
})

after(async () => {
  await host?.close()
  await service?.stop()
  await removeHome(home)
})

test('trap 1 (stale `latest` tags): every installed @deepseek-ai/dsh-* package is the pinned version', async () => {
  const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
  const pinned = Object.entries(manifest.devDependencies).filter(([name]) => name.startsWith('@deepseek-ai/dsh-'))
  assert.ok(pinned.length >= 6)
  for (const [name, range] of pinned) {
    assert.equal(range, PIN, `${name} is pinned exactly`)
    const installed = JSON.parse(await readFile(new URL(`../node_modules/${name}/package.json`, import.meta.url), 'utf8'))
    assert.equal(installed.version, PIN, `${name} installed at ${installed.version}`)
  }
})

test('trap 2 (undeclared service access throws): the plugin boots on a profile with no tool, command or skill registry, and mounts them when they arrive', async () => {
  const minimal = await bootHost({ tools: false, commands: false, skills: false })
  try {
    await minimal.root.plugin(plur, { home })
    const assembly = await minimal.root.systemPrompt.assemble()
    assert.equal(memorySection(assembly), '', 'the section is registered and empty without an agent')
    await minimal.root.plugin(ToolRuntime, {})
    await minimal.root.plugin(CommandRuntime)
    await minimal.root.plugin(SkillRegistry)
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.deepEqual(minimal.root.tools.schemas().map((s) => s.name).filter((n) => n.startsWith('plur_')).sort(), TOOLS)
    assert.equal((await minimal.root.skills.get('plur-memory'))?.name, 'plur-memory')
  } finally {
    await minimal.close()
  }
})

test('trap 3 (commands take `handler` and return a CommandResult): /plur runs through the real command registry', async () => {
  assert.ok(host.root.commands.list(delta).some((c) => c.name === 'plur'))
  const signal = AbortSignal.timeout(20000)
  const status = await host.root.commands.execute(delta, '/plur', [], signal)
  assert.equal(status.result.kind, 'success', status.result.text)
  assert.match(status.result.text, /engrams in .*this agent's scope: project:delta/)
  assert.doesNotMatch(status.result.text, /Warning/)
  // config.toml edited while the service runs: /plur status says the service ignores it, and how to apply it
  await writeFile(join(home, 'config.toml'), '# edited after the service started\n')
  try {
    const stale = await host.root.commands.execute(delta, '/plur status', [], signal)
    assert.match(stale.result.text, /Warning: .*config\.toml changed since the plur service started.*plur service stop && plur service start/)
  } finally {
    await rm(join(home, 'config.toml'))
  }
  assert.doesNotMatch((await host.root.commands.execute(delta, '/plur status', [], signal)).result.text, /Warning/)
  const recall = await host.root.commands.execute(delta, '/plur recall where are orders stored', [], signal)
  assert.equal(recall.result.kind, 'success')
  assert.match(recall.result.text, /DELTA-db/)
  assert.doesNotMatch(recall.result.text, /OMEGA-db/)
  const learned = await host.root.commands.execute(delta, '/plur learn Delta CMDFACT: releases are tagged vX.Y.', [], signal)
  assert.equal(learned.result.kind, 'success')
  assert.match(learned.result.text, /^Learned ENG-\S+ in project:delta\.$/)
  const id = learned.result.text.split(' ')[1]
  const forgot = await host.root.commands.execute(delta, `/plur forget ${id}`, [], signal)
  assert.equal(forgot.result.kind, 'success')
  const bad = await host.root.commands.execute(delta, '/plur frobnicate', [], signal)
  assert.equal(bad.result.kind, 'error')
  assert.match(bad.result.text, /usage: \/plur/)
})

test('trap 4 (skills need `content` and `source`; a wrong shape only fails when opened): the plur-memory skill opens and renders', async () => {
  const skill = await host.root.skills.get('plur-memory')
  assert.equal(skill.source, 'runtime')
  const rendered = renderSkillContent(skill)
  assert.match(rendered, /<skill_content name="plur-memory">/)
  assert.match(rendered, /plur_recall/)
})

test('trap 5 (event payloads are objects) and trap 7 (ctx.effect disposes): agent/disposed clears the entry; disposing the plugin removes everything; a reload works', async () => {
  const other = await bootHost()
  try {
    const fiber = await other.root.plugin(plur, { home, waitMs: 15000 })
    const cwd = join(home, 'work', 'delta')
    const handle = await other.createAgent('agent-short-lived', cwd)
    const agent = handle.agent
    const refreshed = nextRefresh(other.root, agent.id)
    await other.say(agent, 'Where are orders stored?')
    assert.equal((await refreshed).outcome, 'replaced')
    assert.match(memorySection(await other.root.systemPrompt.assemble({ agent })), /DELTA-db/, 'the cache holds the block (read by agent.id)')
    assert.ok(injectionsOf(home, agent.id) >= 1, 'the block went into a prompt: plur\'s statistics count the injection')
    await handle.dispose()
    assert.equal(memorySection(await other.root.systemPrompt.assemble({ agent })), '', 'agent/disposed {agent} cleared the entry')

    await fiber.dispose()
    const gone = await other.root.systemPrompt.assemble()
    assert.equal(memorySection(gone), undefined, 'the section left with the plugin')
    assert.equal(other.root.tools.schemas().some((s) => s.name.startsWith('plur_')), false, 'the tools left with the plugin')
    await other.root.plugin(plur, { home })
    assert.equal(memorySection(await other.root.systemPrompt.assemble()), '', 'a reload registers the section again (no duplicate-name throw)')
  } finally {
    await other.close()
  }
})

test('trap 6 (one section, not one per agent): two agents, one plur:memory section, each reads its own entry', async () => {
  const cwd = join(home, 'work', 'omega')
  await mkdir(cwd, { recursive: true })
  const omega = (await host.createAgent('agent-omega', cwd)).agent
  for (const agent of [delta, omega]) {
    const refreshed = nextRefresh(host.root, agent.id)
    await host.say(agent, 'Where are orders stored?')
    await refreshed
  }
  const a = await host.assembleFor(delta)
  const b = await host.assembleFor(omega)
  assert.equal(a.sections.filter((s) => s.name === 'plur:memory').length, 1)
  assert.match(memorySection(a), /DELTA-db/)
  assert.doesNotMatch(memorySection(a), /OMEGA-db/)
  assert.match(memorySection(b), /OMEGA-db/)
  assert.doesNotMatch(memorySection(b), /DELTA-db/)
})

test('trap 8 (ctx.plugin passes two arguments): apply takes (ctx, config) only and config errors fail the load', async () => {
  assert.ok(apply.length <= 2)
  assert.equal(plur.apply, apply)
  const other = await bootHost()
  try {
    await assert.rejects(async () => other.root.plugin(plur, { home, bogus: 1 }), /unknown key\(s\) bogus/)
    await assert.rejects(async () => other.root.plugin(plur, { home, scope: 'projects' }), /config.scope "projects" is invalid/)
    await assert.rejects(async () => other.root.plugin(plur, { home, enabled: 'no' }), /config.enabled must be true or false, got "no"/)
    await assert.rejects(async () => other.root.plugin(plur, { home, capture: 'some' }), /config.capture "some" is invalid: use 'user', 'all', 'off'/)
    await assert.rejects(async () => other.root.plugin(plur, { home, plurCommand: '' }), /config.plurCommand must be the plur program/)
    await assert.rejects(async () => other.root.plugin(plur, { home, timeoutMs: 0 }), /timeoutMs must be a positive number/)
  } finally {
    await other.close()
  }
})

test('trap 9 (a scope filter is visibility, not authorization): an agent without a cwd gets `global`, never `null` (= every scope)', async () => {
  const nowhere = (await host.createAgent('agent-nowhere')).agent
  const refreshed = nextRefresh(host.root, nowhere.id)
  await host.say(nowhere, 'Where are orders stored?')
  const refresh = await refreshed
  assert.equal(refresh.scope, 'global')
  const section = memorySection(await host.assembleFor(nowhere))
  assert.doesNotMatch(section, /DELTA-db|OMEGA-db|project:/, 'no project engram (nor a count of one) reaches an agent with no project')
  assert.equal(scopeFor({ session: { header: {} } }, 'cwd', home), 'global')
  assert.equal(scopeFor({ session: { header: { cwd: '/nowhere-such/lin/My Repo/' } } }, 'cwd', home), 'project:My-Repo')
  assert.match(scopeFor({ session: { header: { cwd: '/' } } }, 'cwd', home), /^project:folder-[0-9a-f]{8}$/, 'a workspace is never global')
  assert.equal(scopeFor({ session: { header: { cwd: '/x/y' } } }, 'agent:lin'), 'agent:lin')
})

test('tools: the model calls plur_learn through the real loop; recall, feedback, status and forget run through the real tool pipeline', async () => {
  host.model.toolCalls.set(delta.id, [{ name: 'plur_learn', arguments: { statement: 'Delta TOOLFACT: the staging database is reset every night.', tags: ['ops'] } }])
  const before = host.model.requests.length
  await host.say(delta, 'Please remember that staging resets nightly.')
  const requests = host.model.requests.slice(before)
  assert.equal(requests.length, 2, 'tool call, then the answer after the tool result')
  const hits = await service.api.request('POST', '/recall', { query: 'staging database reset nightly', k: 3, scope: 'project:delta' })
  const learned = hits.hits.find((h) => h.engram.statement.includes('TOOLFACT'))
  assert.ok(learned, 'the engram exists')
  assert.equal(learned.engram.scope, 'project:delta', 'learned in the agent\'s scope')
  assert.deepEqual(learned.engram.tags, ['ops'])

  const run = (name, args) => host.root.tools.execute({ callId: `c-${name}`, name, arguments: args, agent: delta, signal: AbortSignal.timeout(20000) })
  const recall = await run('plur_recall', { query: 'staging reset', k: 3 })
  assert.equal(recall.isError, false)
  assert.match(recall.content[0].text, new RegExp(`\\[${learned.engram.id}\\]`))
  const same = await service.api.request('POST', '/recall', { query: 'staging reset', k: 3, scope: 'project:delta' })
  const marks = recall.content[0].text.split('\n').map((line) => line.includes('(below the relevance floor'))
  assert.deepEqual(marks, same.hits.map((h) => h.below_floor !== ''), 'each line marked exactly when the floor keeps its hit out')
  assert.ok(marks.includes(true) && marks.includes(false), `a hit on each side of the floor: ${recall.content[0].text}`)
  const feedback = await run('plur_feedback', { id: learned.engram.id, useful: true })
  assert.equal(feedback.isError, false)
  assert.match(feedback.content[0].text, /useful 1, not useful 0/)
  const status = await run('plur_status', {})
  assert.match(status.content[0].text, /^plur \S+: \d+ engrams/)
  // the agent's scope bounds its model, as `plur mcp --scope` does: another project's engram is absent to it,
  // and a global one may be read and rated but not forgotten
  const omega = await service.api.request('POST', '/recall', { query: 'OMEGA-db DynamoDB', k: 1, scope: 'project:omega' })
  const omegaId = omega.hits[0].engram.id
  assert.equal(omega.hits[0].engram.scope, 'project:omega')
  for (const [tool, args] of [['plur_forget', { id: omegaId }], ['plur_feedback', { id: omegaId, useful: false }]]) {
    const refused = await run(tool, args)
    assert.equal(refused.isError, true, `${tool} on another project's engram`)
    assert.match(refused.content[0].text, /no engram .* in this agent's scope project:delta/)
  }
  assert.equal((await service.api.request('GET', `/engrams/${omegaId}`)).engram.id, omegaId, 'still there')
  const shared = await service.api.request('POST', '/learn', { statement: 'A global TOOLFACT everyone shares.', scope: 'global' })
  assert.equal((await run('plur_feedback', { id: shared.engram.id, useful: true })).isError, false)
  const kept = await run('plur_forget', { id: shared.engram.id })
  assert.equal(kept.isError, true)
  assert.match(kept.content[0].text, /is in scope global; this agent may only change or forget engrams in project:delta/)
  await service.api.request('POST', '/forget', { id: shared.engram.id })
  const forget = await run('plur_forget', { id: learned.engram.id })
  assert.equal(forget.content[0].text, `Forgot ${learned.engram.id}.`)
  const again = await run('plur_forget', { id: learned.engram.id })
  assert.equal(again.isError, true, 'a missing id is a tool error result, not a throw')
  assert.match(again.content[0].text, /^Error: no engram .* in this agent's scope project:delta/)
  const invalid = await run('plur_learn', {})
  assert.equal(invalid.isError, true, 'missing required argument: INVALID_ARGS result')
})

test('plur_learn says whom a note is about (issue 46 D): about user -> global, project -> the agent\'s project, unsaid -> plur decides', async () => {
  const run = (args) => host.root.tools.execute({ callId: `a-${args.statement.length}`, name: 'plur_learn', arguments: args, agent: delta, signal: AbortSignal.timeout(20000) })
  const learn = host.root.tools.schemas().find((s) => s.name === 'plur_learn')
  assert.deepEqual(learn.parameters.properties.about.enum, ['user', 'project'])
  const cases = [
    [{ statement: 'My daughter Mira has violin lessons every Thursday.' }, 'global'],
    [{ statement: 'The delta dev server listens on port 5173.' }, 'project:delta'],
    [{ statement: 'Deploy delta with helm, never by hand.', about: 'user' }, 'global'],
    [{ statement: 'I prefer the delta logs in JSON.', about: 'project' }, 'project:delta'],
  ]
  for (const [args, scope] of cases) {
    const result = await run(args)
    assert.equal(result.isError, false, result.content[0].text)
    assert.match(result.content[0].text, new RegExp(` in ${scope}\\.$`), `${args.statement} -> ${scope}`)
    const id = /(ENG-\S+) in /.exec(result.content[0].text)[1]
    await service.api.request('POST', '/forget', { id })
  }
})

test('neutraliseTemplate: no brace pair survives, words are kept', () => {
  assert.equal(neutraliseTemplate('a {{model}} b'), 'a { {model} } b')
  assert.equal(neutraliseTemplate('{{{x}}}'), '{ { {x} } }')
  assert.equal(neutraliseTemplate('{{ and }} alone'), '{ { and } } alone')
  assert.equal(neutraliseTemplate('{single} ${HOME}'), '{single} ${HOME}')
  for (const s of ['{{', '}}}}', '{{{{a}}}}', 'x{{y}}z{{']) assert.doesNotMatch(neutraliseTemplate(s), /\{\{|\}\}/)
})

test('latestUserText, userText and resolveConfig: literal inputs', () => {
  const msg = (kind, text) => ({ source: { kind }, content: [{ type: 'text', text }] })
  assert.equal(latestUserText([msg('user', 'first'), msg('user', 'second'), msg('plugin', 'notice')]), 'second')
  assert.equal(latestUserText([msg('plugin', 'only a notice')]), '', 'a plugin-injected user-role message is never the query')
  assert.equal(userText(msg('plugin', 'You are repeating the exact same tool call')), '')
  assert.equal(userText({ role: 'user', content: [{ type: 'text', text: 'no source' }] }), '', 'no source, not the user\'s')
  assert.equal(userText(msg('user', '  What is my dog called?  ')), 'What is my dog called?')
  assert.equal(latestUserText([{ source: { kind: 'user' }, content: [{ type: 'tool-result', toolCallId: 'x', content: [] }] }]), '')
  assert.equal(latestUserText([]), '')
  assert.equal(resolveConfig({ home: '/h' }).timeoutMs, 5000)
  assert.equal(resolveConfig({ home: '/h' }).scope, 'cwd')
  assert.equal(resolveConfig({ home: '/h', scope: 'project' }).scope, 'cwd', "'project' names the session folder's project, as 'cwd' does")
  assert.deepEqual([resolveConfig({ home: '/h' }).enabled, resolveConfig({ home: '/h' }).capture, resolveConfig({ home: '/h' }).autoStart], [true, 'user', true])
  assert.equal(resolveConfig({ home: '/h' }).waitMs, 1500)
  assert.equal(resolveConfig({ home: '/h', turnWaitMs: 0 }).turnWaitMs, 0)
  assert.throws(() => resolveConfig({ home: '/h', waitMs: -1 }), /config.waitMs must be a number of milliseconds >= 0, got -1/)
})

test('a DSH bundle: `dsh plugin add` activates only packages whose manifest declares dsh.bundle.patch', async () => {
  const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
  assert.equal(manifest.dsh?.bundle?.patch, './cordis.patch.yml')
  assert.ok(manifest.files.includes('cordis.patch.yml'), 'the patch ships in the package')
  const patch = await readFile(new URL('../cordis.patch.yml', import.meta.url), 'utf8')
  assert.match(patch, /^- insert:\n\s+- id: plur\n\s+name: '@plur-ai\/dsh'$/m, 'the patch inserts this package as a plugin row')
  const entry = await import(manifest.name)
  assert.equal(typeof entry.default.apply, 'function', 'the row\'s module resolves to a Cordis plugin')
  assert.deepEqual(entry.default.inject, ['systemPrompt'])
})

test('client: the unix socket is preferred, the loopback URL is the fallback, a wrong token is a 401 error', async () => {
  const info = service.info
  const variant = async (name, patch) => {
    const dir = join(home, name)
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, 'service.json'), JSON.stringify({ ...info, ...patch }))
    return new PlurClient({ home: dir, timeoutMs: 10000 })
  }
  const viaSocket = await variant('socket-only', { url: 'http://127.0.0.1:9' }) // nothing listens on port 9
  assert.equal((await viaSocket.request('GET', '/status')).api, 1, 'answered over the socket')
  const viaTcp = await variant('tcp-only', { socket: null })
  assert.equal((await viaTcp.request('GET', '/status')).api, 1, 'answered over loopback TCP')
  const wrong = await variant('wrong-token', { token: 'not-the-token' })
  await assert.rejects(wrong.request('GET', '/status'), (error) => error.code === 'HTTP' && error.status === 401 && /token rejected/.test(error.message))
  const none = new PlurClient({ home: join(home, 'no-such-home'), timeoutMs: 1000 })
  await assert.rejects(none.request('GET', '/status'), (error) => error.code === 'NO_SERVICE' && /plur serve/.test(error.message))
})

test('versions: peers accept the 0.1.x line (release candidates included); the hmr row is re-enabled only for a 0.1.0 launcher, and kept off in a later headless profile', async () => {
  const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
  const { createRequire } = await import('node:module')
  const semver = createRequire(import.meta.url)('semver')
  for (const [name, range] of Object.entries(manifest.peerDependencies).filter(([n]) => n.startsWith('@deepseek-ai/dsh-'))) {
    for (const ok of ['0.1.0-rc.8', '0.1.1-rc.2', '0.1.5-rc.2', '0.1.5', '0.1.9']) assert.ok(semver.satisfies(ok, range), `${name} accepts ${ok}`)
    for (const no of ['0.1.0-rc.6', '0.0.1-rc.1', '0.2.0-rc.2']) assert.ok(!semver.satisfies(no, range), `${name} refuses ${no}`)
  }
  const patch = await readFile(new URL('../cordis.patch.yml', import.meta.url), 'utf8')
  const body = /- id: hmr\n {2}disabled: !!js \|-\n((?: {4}.*\n?)+)/.exec(patch)[1].replace(/^ {4}/gm, '')
  const work = join(home, 'launchers')
  const disabledFor = async (version, args) => {
    const bin = join(work, version, 'node_modules', '@deepseek-ai', 'dsh', 'lib', 'bin.js')
    await mkdir(join(bin, '..'), { recursive: true })
    await writeFile(bin, '')
    await writeFile(join(bin, '..', '..', 'package.json'), JSON.stringify({ name: '@deepseek-ai/dsh', version }))
    const saved = process.argv
    process.argv = [saved[0], bin, ...args]
    try { return (0, eval)(body) } finally { process.argv = saved }
  }
  assert.equal(await disabledFor('0.1.0-rc.8', ['--profile', 'headless', 'q']), false, 'rc.8 needs it: on')
  assert.equal(await disabledFor('0.1.5-rc.2', ['--profile', 'headless', 'q']), true, 'a later headless profile: left off')
  assert.equal(await disabledFor('0.1.5-rc.2', ['web']), false, 'a later web profile: on, as its bundle has it')
})
