// One turn as DSH runs it: the block is in the FIRST model request, recalled for the words the
// user typed (never for DSH's own user-role reminders), and every request of the turn carries the
// same system prompt, byte for byte. On the real host (registries, agent loop, and DSH's own
// loop guard, @deepseek-ai/dsh-repeat-tool-reminder) against a real `plur serve`.
import './support/es2024.js'
import assert from 'node:assert/strict'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import * as RepeatToolReminder from '@deepseek-ai/dsh-repeat-tool-reminder'
import plur from '../src/index.js'
import { importFromHost } from '../src/host.js'
import { bootHost, nextRefresh } from './support/host.js'
import { removeHome, startPlur, tempHome, warm } from './support/plur.js'

// Generous bounds for a loaded 2-core machine; the defaults are 1500 / 250 ms.
const BOUNDS = { timeoutMs: 15000, waitMs: 15000, turnWaitMs: 15000 }
let home, service, cwd

before(async () => {
  home = await tempHome()
  service = await startPlur(home)
  const learn = (statement, scope = 'project:kappa') => service.api.request('POST', '/learn', { statement, scope })
  await learn('DOG-name: Lin\'s dog is called Biscuit, a beagle.', 'global')
  await learn('KAPPA-db: the kappa service stores orders in PostgreSQL.')
  await learn('KAPPA-ci: kappa runs its tests on every push.')
  await learn('KAPPA-loop: when a tool repeats, inspect the latest result before trying again.')
  await warm(service.api)
  cwd = join(home, 'work', 'kappa')
  await mkdir(cwd, { recursive: true })
})

after(async () => {
  await service?.stop()
  await removeHome(home)
})

/** Collect `plur/refresh` and `plur/show` events of a host. */
function events (root) {
  const seen = { refresh: [], show: [] }
  root.on('plur/refresh', (payload) => { seen.refresh.push(payload) })
  root.on('plur/show', (payload) => { seen.show.push(payload) })
  return seen
}

test('first request carries the block; DSH\'s loop-guard nudge is not a query; one system prompt across the turn\'s steps', async () => {
  const host = await bootHost()
  try {
    // DSH's own loop guard: a reminder (a user-role message, source plugin) after the 2nd identical call.
    await host.root.plugin(RepeatToolReminder, { thresholds: [2, 3] })
    await host.root.plugin(plur, { home, ...BOUNDS })
    const seen = events(host.root)
    const agent = (await host.createAgent('agent-kappa', cwd)).agent
    const same = { name: 'plur_recall', arguments: { query: 'orders database' } }
    host.model.toolCalls.set(agent.id, [same, same, same])
    const refreshed = nextRefresh(host.root, agent.id)
    await host.say(agent, 'What is my dog called?')
    await refreshed
    const requests = host.model.requests.filter((r) => r.sessionId === agent.id)
    assert.equal(requests.length, 4, 'three tool steps, then the answer')
    const nudges = requests.flatMap((r) => r.userTexts).filter((m) => m.source === 'plugin' && /repeat|same tool|identical/i.test(m.text))
    assert.ok(nudges.length >= 1, `DSH's loop guard injected its reminder: ${JSON.stringify(requests.at(-1).userTexts)}`)
    assert.match(requests[0].system, /<plur-memory>[\s\S]*DOG-name[\s\S]*<\/plur-memory>/, 'the block, with the engram that answers, is in the first request')
    for (const [i, r] of requests.entries()) assert.equal(r.system, requests[0].system, `request ${i + 1} has the first request's system prompt, byte for byte`)
    assert.equal(seen.show.length, 1, 'one block shown for one user message')
    assert.equal(seen.show[0].first, true)
    assert.equal(seen.show[0].settled, true)
    // Every refresh was for the user's words: exactly one (the reminders started none).
    await host.say(agent, 'What is my dog called?')
    assert.deepEqual(seen.refresh.map((r) => r.query), ['What is my dog called?', 'What is my dog called?'])
    const again = host.model.requests.filter((r) => r.sessionId === agent.id).at(-1)
    assert.equal(again.system, requests[0].system, 'the same words next turn: the same prompt (hash gate)')
  } finally {
    await host.close()
  }
})

test('a block that lands mid-turn is shown from the next turn on, never between two steps of one turn', async () => {
  const host = await bootHost()
  try {
    // No wait at all: the refresh is still in flight when the first request goes out.
    await host.root.plugin(plur, { home, timeoutMs: 15000, waitMs: 0, turnWaitMs: 0 })
    const seen = events(host.root)
    const agent = (await host.createAgent('agent-late', cwd)).agent
    const landed = nextRefresh(host.root, agent.id)
    let first = true
    host.model.beforeAnswer = async () => {
      if (!first) return
      first = false
      await landed // the block lands while the model "thinks" about step 1
    }
    host.model.toolCalls.set(agent.id, [{ name: 'plur_status', arguments: {} }])
    await host.say(agent, 'Where does kappa store orders?')
    assert.equal((await landed).outcome, 'replaced')
    const turn1 = host.model.requests.filter((r) => r.sessionId === agent.id)
    assert.equal(turn1.length, 2)
    assert.equal(turn1[0].system.includes('<plur-memory>'), false, 'not landed at the first request (waitMs 0)')
    assert.equal(turn1[1].system, turn1[0].system, 'landed during step 1, yet step 2 has the same system prompt')
    assert.equal(seen.show[0].settled, false)
    await host.say(agent, 'Thanks. Anything else about kappa?')
    const turn2 = host.model.requests.filter((r) => r.sessionId === agent.id).slice(2)
    assert.match(turn2[0].system, /KAPPA-db/, 'the next turn shows the block that landed')
  } finally {
    host.model.beforeAnswer = undefined
    await host.close()
  }
})

test('the first request waits at most waitMs for a service that does not answer, then goes on without a block', async () => {
  service.proc.kill('SIGSTOP')
  const host = await bootHost()
  try {
    await host.root.plugin(plur, { home, timeoutMs: 60000, waitMs: 300, turnWaitMs: 0 })
    const seen = events(host.root)
    const agent = (await host.createAgent('agent-stalled', cwd)).agent
    await host.say(agent, 'What is my dog called?')
    const [request] = host.model.requests.filter((r) => r.sessionId === agent.id)
    assert.equal(request.system.includes('<plur-memory>'), false, 'went on without a block')
    assert.equal(seen.show[0].settled, false, 'the wait gave up at the bound')
    assert.equal(seen.refresh.length, 0, 'the refresh was still in flight when the turn ended')
  } finally {
    service.proc.kill('SIGCONT')
    await host.close()
  }
})

test('plur_learn advertises the types GET /api/v1/schema gives (the store\'s), through the real tool registry', async () => {
  const host = await bootHost()
  try {
    await host.root.plugin(plur, { home, ...BOUNDS })
    const deadline = Date.now() + 30000
    let learn
    while ((learn = host.root.tools.schemas().find((s) => s.name === 'plur_learn')) === undefined) {
      if (Date.now() > deadline) throw new Error('plur_learn never registered')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const schema = await service.api.request('GET', '/schema')
    assert.deepEqual(learn.parameters.properties.type.enum, schema.types)
    assert.ok(!schema.types.includes('preference') && !schema.types.includes('event'))
    const agent = (await host.createAgent('agent-types', cwd)).agent
    for (const type of schema.types) {
      const result = await host.root.tools.execute({ callId: `t-${type}`, name: 'plur_learn', arguments: { statement: `TYPE-${type}: an engram of type ${type}.`, type }, agent, signal: AbortSignal.timeout(20000) })
      assert.equal(result.isError, false, `${type}: ${result.content[0].text}`)
    }
  } finally {
    await host.close()
  }
})

test('a tool mount that fails is logged once through the host\'s logger, and the rest of the plugin works', async () => {
  const host = await bootHost()
  try {
    // Another plugin already owns the name plur_status: registering ours throws.
    const { module: { defineTool } } = await importFromHost('@deepseek-ai/dsh-tools')
    host.root.tools.register(defineTool({ name: 'plur_status', description: 'someone else\'s', parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: async () => 'x' }))
    await host.root.plugin(plur, { home, ...BOUNDS })
    const deadline = Date.now() + 30000
    const text = (m) => m.args.map(String).join(' ')
    const warnings = () => host.root.logger.buffer.filter((m) => m.name === 'plur' && m.type === 'error' && /tools not mounted/.test(text(m)))
    while (warnings().length === 0) {
      if (Date.now() > deadline) throw new Error(`no error logged: ${JSON.stringify(host.root.logger.buffer.map(text))}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal(warnings().length, 1)
    assert.match(text(warnings()[0]), /plur_status/)
    assert.ok((await host.root.skills.get('plur-memory')) !== undefined, 'the skill still mounted')
  } finally {
    await host.close()
  }
})

test('importFromHost: the host\'s module graph first, the plugin\'s own folder next, one clear error when neither has it', async () => {
  const empty = await mkdtemp(join(tmpdir(), 'plur-anchor-'))
  try {
    const fromHost = await importFromHost('@deepseek-ai/dsh-tools', { anchors: [join(empty, 'x.js'), new URL('./support/host.js', import.meta.url).pathname] })
    assert.equal(typeof fromHost.module.defineTool, 'function')
    assert.match(fromHost.from, /node_modules[\\/]@deepseek-ai[\\/]dsh-tools[\\/]/)
    const own = await importFromHost('@deepseek-ai/dsh-tools', { anchors: [join(empty, 'x.js')], own: () => import('@deepseek-ai/dsh-tools') })
    assert.equal(own.from, 'plugin')
    await assert.rejects(importFromHost('@deepseek-ai/no-such-package', { anchors: [join(empty, 'x.js')], own: () => import('@deepseek-ai/no-such-package') }),
      /cannot import @deepseek-ai\/no-such-package: not found from .*x\.js \(MODULE_NOT_FOUND\); the plugin's own folder \(ERR_MODULE_NOT_FOUND\)/)
  } finally {
    await rm(empty, { recursive: true, force: true })
  }
})
