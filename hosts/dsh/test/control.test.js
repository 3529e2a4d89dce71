// What a DSH user controls, on the real host registries and a real `plur serve`: the model's
// plur_update / plur_show / plur_list (kept to the agent's scope, as plur_forget is), the /plur
// command's list, show, url, projects, forget (scope named, another project's refused), bind, unbind,
// export, import and capture.
import './support/es2024.js'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import plur from '../src/index.js'
import { bootHost } from './support/host.js'
import { PYTHON, removeHome, startPlur, tempHome, warm } from './support/plur.js'

let home, service, host, delta, tabs, omegaId, sharedId

before(async () => {
  home = await tempHome()
  service = await startPlur(home)
  tabs = (await service.api.request('POST', '/learn', { statement: 'Delta TABS: the delta codebase indents with tabs.', scope: 'project:delta', tags: ['style'] })).engram
  omegaId = (await service.api.request('POST', '/learn', { statement: 'Project omega OMEGA-db: omega stores orders in DynamoDB.', scope: 'project:omega' })).engram.id
  sharedId = (await service.api.request('POST', '/learn', { statement: 'SHARED: Lin reviews every pull request.', scope: 'global', type: 'user' })).engram.id
  await warm(service.api)
  host = await bootHost()
  await host.root.plugin(plur, { capture: 'off', home, timeoutMs: 15000, waitMs: 15000, turnWaitMs: 15000, autoStart: false, plurCommand: [PYTHON, '-m', 'plur'] })
  const cwd = join(home, 'work', 'delta')
  await mkdir(cwd, { recursive: true })
  delta = (await host.createAgent('agent-delta', cwd)).agent
})

after(async () => {
  await host?.close()
  await service?.stop()
  await removeHome(home)
})

const run = (name, args) => host.root.tools.execute({ callId: `c-${name}-${Math.random()}`, name, arguments: args, agent: delta, signal: AbortSignal.timeout(20000) })
const command = (line) => host.root.commands.execute(delta, line, [], AbortSignal.timeout(20000)).then((r) => r.result)

test('plur_update through the real loop: the model corrects a note in place, the store shows it', async () => {
  host.model.toolCalls.set(delta.id, [{ name: 'plur_update', arguments: { id: tabs.id, statement: 'Delta TABS: the delta codebase indents with 2 spaces.', tags: ['style', 'indent'] } }])
  const before = host.model.requests.length
  await host.say(delta, 'Change the tabs note to 2 spaces.')
  assert.equal(host.model.requests.length - before, 2, 'the tool call, then the answer')
  const stored = (await service.api.request('GET', `/engrams/${tabs.id}`)).engram
  assert.equal(stored.statement, 'Delta TABS: the delta codebase indents with 2 spaces.')
  assert.deepEqual(stored.tags, ['style', 'indent'])
  assert.equal(stored.scope, 'project:delta')
  const pinned = await run('plur_update', { id: tabs.id, pinned: true })
  assert.equal(pinned.isError, false, pinned.content[0].text)
  assert.equal((await service.api.request('GET', `/engrams/${tabs.id}`)).engram.pinned, true)
  const nothing = await run('plur_update', { id: tabs.id })
  assert.equal(nothing.isError, true)
  assert.match(nothing.content[0].text, /needs at least one of statement, type, tags, pinned/)
})

test('plur_show and plur_list: the agent\'s scope and global, whole', async () => {
  const shown = await run('plur_show', { id: tabs.id })
  assert.equal(shown.isError, false)
  assert.match(shown.content[0].text, new RegExp(`^\\[${tabs.id}\\] Delta TABS: the delta codebase indents with 2 spaces\\.\\ntype: fact\\nscope: project:delta\\ntags: style, indent\\npinned: yes`))
  const global = await run('plur_show', { id: sharedId })
  assert.match(global.content[0].text, /scope: global/)
  const listed = await run('plur_list', {})
  assert.equal(listed.isError, false)
  const lines = listed.content[0].text.split('\n')
  assert.ok(lines.some((l) => l.includes(tabs.id)) && lines.some((l) => l.includes(sharedId)), listed.content[0].text)
  assert.ok(!listed.content[0].text.includes('OMEGA'), 'another project\'s note is not listed')
  const users = await run('plur_list', { type: 'user' })
  assert.deepEqual(users.content[0].text.split('\n').map((l) => l.slice(1, l.indexOf(']'))), [sharedId])
  const words = await run('plur_list', { text: 'spaces', limit: 5 })
  assert.match(words.content[0].text, /TABS/)
  assert.doesNotMatch(words.content[0].text, /SHARED/)
})

test('another project\'s id is refused by plur_update, plur_show and plur_forget alike; a global note is read-only', async () => {
  for (const [tool, args] of [['plur_update', { id: omegaId, statement: 'hijacked' }], ['plur_show', { id: omegaId }], ['plur_forget', { id: omegaId }]]) {
    const refused = await run(tool, args)
    assert.equal(refused.isError, true, tool)
    assert.match(refused.content[0].text, /no engram .* in this agent's scope project:delta \(or global\)/, tool)
  }
  const omega = (await service.api.request('GET', `/engrams/${omegaId}`)).engram
  assert.equal(omega.statement, 'Project omega OMEGA-db: omega stores orders in DynamoDB.', 'unchanged')
  const global = await run('plur_update', { id: sharedId, statement: 'SHARED: nobody reviews.' })
  assert.equal(global.isError, true)
  assert.match(global.content[0].text, /is in scope global; this agent may only change or forget engrams in project:delta/)
})

test('/plur list, show, projects and url answer; /plur forget names the scope and refuses another project\'s note without --any-scope', async () => {
  const list = await command('/plur list')
  assert.equal(list.kind, 'success')
  assert.match(list.text, /TABS/)
  assert.doesNotMatch(list.text, /OMEGA/)
  const show = await command(`/plur show ${omegaId}`)
  assert.match(show.text, /scope: project:omega/, 'the user owns every scope: show reads any')
  const projects = await command('/plur projects')
  assert.equal(projects.kind, 'success')
  assert.match(projects.text, /^global: 1 engram$/m)
  assert.match(projects.text, /^project:delta: 1 engram \(this session\)$/m)
  assert.match(projects.text, /^project:omega: 1 engram$/m)
  const url = await command('/plur url')
  const info = JSON.parse(await readFile(join(home, 'service.json'), 'utf8'))
  const prefix = execFileSync(PYTHON, ['-c', 'import sys; from plur.net.logincode import page_prefix; print(page_prefix(sys.argv[1]))', info.login], { encoding: 'utf8' }).trim()
  const link = url.text.split(' ').at(-1)
  assert.ok(link.startsWith(`${info.url.replace(/\/+$/, '')}${prefix}/?login=`), `${link}: plur's own page prefix (${prefix}) and a login code`)
  const page = await fetch(link, { redirect: 'manual' })
  assert.ok(page.status < 400 && /plur/i.test(page.headers.get('set-cookie') ?? ''), `the link logs in (HTTP ${page.status}, cookie ${page.headers.get('set-cookie')})`)
  assert.ok((await fetch(link, { redirect: 'manual' })).status >= 400, 'and works once')
  const refused = await command(`/plur forget ${omegaId}`)
  assert.equal(refused.kind, 'error')
  assert.match(refused.text, new RegExp(`Not forgotten: ${omegaId} is in project:omega, another project than this session's project:delta.*--any-scope`))
  assert.equal((await service.api.request('GET', `/engrams/${omegaId}`)).engram.id, omegaId, 'still there')
  const forced = await command(`/plur forget ${omegaId} --any-scope`)
  assert.equal(forced.kind, 'success', forced.text)
  assert.match(forced.text, new RegExp(`Forgot ${omegaId} \\(project:omega\\)`))
})

test('/plur capture off|on: kept for the process without a settings seam, shown by /plur status', async () => {
  const off = await command('/plur capture off')
  assert.equal(off.kind, 'success')
  assert.match(off.text, /Capture off for this host process/)
  assert.match((await command('/plur status')).text, /capture off\./)
  assert.match((await command('/plur capture on')).text, /Capture on/)
  assert.match((await command('/plur status')).text, /capture user\./)
  assert.equal((await command('/plur capture maybe')).kind, 'error')
})

test('/plur bind <folder>: another folder joins this session\'s project (plur project bind), and its sessions recall there', async () => {
  const api = join(home, 'work', 'delta-api')
  await mkdir(api, { recursive: true })
  const bound = await command(`/plur bind ${api}`)
  assert.equal(bound.kind, 'success', bound.text)
  const which = execFileSync(PYTHON, ['-m', 'plur', '--home', home, 'project', 'which', api], { encoding: 'utf8', env: { ...process.env, PLUR_AUTOSTART_SERVICE: '0' } }).trim()
  assert.equal(which, 'project:delta')
  const other = (await host.createAgent('agent-delta-api', api)).agent
  const listed = await host.root.tools.execute({ callId: 'c-bound', name: 'plur_list', arguments: { text: 'TABS' }, agent: other, signal: AbortSignal.timeout(20000) })
  assert.match(listed.content[0].text, /project:delta.*TABS/, 'the bound folder\'s session sees delta\'s notes')
  assert.equal((await command('/plur bind')).kind, 'error')
})

test('/plur export, import and unbind go through the service: a file in the session folder, notes into this session\'s scope, a folder its own project again', async () => {
  // a session whose folder is outside the plur home (an export never writes inside the home)
  const outside = await mkdtemp(join(tmpdir(), 'plur-dsh-out-'))
  const cwd = join(outside, 'kappa')
  await mkdir(cwd)
  const kappa = (await host.createAgent('agent-kappa', cwd)).agent
  const say = (line) => host.root.commands.execute(kappa, line, [], AbortSignal.timeout(20000)).then((r) => r.result)
  try {
    const exported = await say('/plur export notes.jsonl')
    assert.equal(exported.kind, 'success', exported.text)
    const file = join(cwd, 'notes.jsonl')
    const lines = (await readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l))
    assert.equal(exported.text, `Exported ${lines.length} notes to ${file}.`)
    assert.ok(lines.some((e) => e.id === tabs.id && e.scope === 'project:delta'), 'every note, with its scope')
    const again = await say('/plur export notes.jsonl')
    assert.equal(again.kind, 'error')
    assert.match(again.text, /previous plur export.*--force/, 'a previous export is replaced only when asked')
    assert.equal((await say('/plur export notes.jsonl --force')).kind, 'success')
    const nowhere = await say('/plur export /nowhere/at/all.jsonl')
    assert.equal(nowhere.kind, 'error')
    assert.match(nowhere.text, /does not exist/)
    const inHome = await say(`/plur export ${join(home, 'x.jsonl')}`)
    assert.match(inHome.text, /inside the plur home/)

    await writeFile(join(cwd, 'more notes.md'), 'KAPPA-IMPORT: the kappa release train leaves on Thursdays.\n')
    const preview = await say('/plur import more notes.md --dry-run')
    assert.equal(preview.kind, 'success', preview.text)
    assert.match(preview.text, /^Would import 1 new note, 0 already known, from .*more notes\.md into project:kappa \(--dry-run: nothing written\)\.$/)
    assert.equal((await service.api.request('POST', '/list', { text: 'KAPPA-IMPORT', limit: 5 })).engrams.length, 0)
    const imported = await say('/plur import more notes.md')
    assert.match(imported.text, /^Imported 1 new note, 0 already known, from .* into project:kappa\.$/)
    const stored = (await service.api.request('POST', '/list', { text: 'KAPPA-IMPORT', limit: 5 })).engrams
    assert.deepEqual(stored.map((e) => e.scope), ['project:kappa'])
    assert.equal((await say('/plur import')).kind, 'error')
  } finally {
    await rm(outside, { recursive: true, force: true })
  }

  const api = join(home, 'work', 'delta-api')
  const unbound = await command(`/plur unbind ${api}`)
  assert.equal(unbound.kind, 'success', unbound.text)
  assert.match(unbound.text, /\(was project:delta\)/)
  const which = execFileSync(PYTHON, ['-m', 'plur', '--home', home, 'project', 'which', api], { encoding: 'utf8', env: { ...process.env, PLUR_AUTOSTART_SERVICE: '0' } }).trim()
  assert.notEqual(which, 'project:delta')
  const notBound = await command(`/plur unbind ${api}`)
  assert.equal(notBound.kind, 'error')
  assert.match(notBound.text, /is not bound to a project/)
})

test('capture numbers a typed message by its place among the session\'s typed messages (restored history counted, plugin messages not)', async () => {
  const { typedTurn, sessionOf } = await import('../src/capture.js')
  const typed = (id) => ({ type: 'user/message', data: { id, source: { kind: 'user' }, content: [] } })
  const events = [typed('a'), { type: 'user/message', data: { id: 'ctx', source: { kind: 'plugin' } } }, { type: 'assistant/message', data: {} }, typed('b')]
  const agent = { id: 'x', session: { header: { id: 'session-1' }, events } }
  assert.equal(typedTurn(agent, 'a'), 0)
  assert.equal(typedTurn(agent, 'b'), 1, 'the runtime-context snapshot and the answer are not counted')
  assert.equal(typedTurn(agent, 'c'), 2, 'a message not logged yet comes next')
  assert.equal(sessionOf(agent), 'session-1')
})

test('capture = all: the answer to the latest typed message, numbered as its question', async () => {
  const { answerOf } = await import('../src/capture.js')
  const typed = (id) => ({ type: 'user/message', data: { id, source: { kind: 'user' }, content: [] } })
  const said = (text) => ({ type: 'assistant/message', data: { message: { role: 'assistant', content: [{ type: 'text', text }] } } })
  const agent = { session: { events: [typed('a'), said('first answer'), typed('b'), said('thinking...'), { type: 'tool/result' }, said('Lena lives in Vienna.')] } }
  assert.deepEqual(answerOf(agent), { text: 'Lena lives in Vienna.', turn: 1 })
  assert.equal(answerOf({ session: { events: [typed('a')] } }), undefined, 'no answer yet')
})

test('capture on: a typed message reaches plur\'s capture after its recall, with DSH\'s session and its turn number; a key in it is not stored', async () => {
  assert.match((await command('/plur capture on')).text, /Capture on/)
  const key = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'
  await host.say(delta, `DELTA-CAPTURE: the delta staging box is called kiwi, token ${key}.`)
  const deadline = Date.now() + 60000
  let found
  while (found === undefined && Date.now() < deadline) {
    found = (await service.api.request('POST', '/list', { text: 'kiwi', limit: 5 })).engrams[0]
    if (found === undefined) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.ok(found, 'the typed message was captured')
  assert.equal(found.scope, 'project:delta')
  assert.deepEqual([found.source.format, found.source.session, found.source.role], ['capture', 'agent-delta', 'user'])
  assert.equal(found.source.turn, 1, 'the second message typed in this session')
  assert.ok(!found.statement.includes(key), `the token is screened out: ${found.statement}`)
  assert.match((await command('/plur capture off')).text, /Capture off/)
})

test('capture off: a typed message is not sent to capture; it is marked in the home (its session and number, never its text) so plur ingest of the log skips it', async () => {
  assert.match((await command('/plur capture off')).text, /Capture off/)
  const { typedTurn } = await import('../src/capture.js')
  const turn = typedTurn(delta, undefined)
  await host.say(delta, 'DELTA-OFF: my locker code is 4411.')
  const marks = (await readFile(join(home, 'capture-off.jsonl'), 'utf8')).trim().split('\n').map((line) => JSON.parse(line))
  const mine = marks.find((m) => m.session === 'agent-delta' && m.turn === turn)
  assert.ok(mine, `marked: ${JSON.stringify(marks)}`)
  assert.deepEqual(Object.keys(mine).sort(), ['at', 'role', 'session', 'turn'])
  assert.equal(mine.role, 'user')
  assert.ok(!marks.some((m) => JSON.stringify(m).includes('4411')), 'no text in the marks')
  assert.equal((await service.api.request('POST', '/list', { text: 'DELTA-OFF', limit: 5 })).engrams.length, 0)
})
