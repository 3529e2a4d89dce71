// A slow, dead, restarted or absent plur service, on the real host: the previous block stays,
// nothing throws into the host, and a turn waits for memory no longer than its bound.
import './support/es2024.js'
import assert from 'node:assert/strict'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { renderPrompt } from '@deepseek-ai/dsh-system-prompt'
import plur from '../src/index.js'
import { bootHost, memorySection, nextRefresh } from './support/host.js'
import { removeHome, startPlur, tempHome, warm } from './support/plur.js'

// Generous enough for a loaded 2-core machine (load average 10 seen); a stopped service always runs into it.
const TIMEOUT_MS = 8000
// The bounded wait for a turn's block: a healthy refresh lands well within it, a stopped service
// never does, and the turn goes on at the bound, before the refresh itself times out.
const WAIT_MS = 4000
let home, service, host, agent

before(async () => {
  home = await tempHome()
  service = await startPlur(home)
  for (const topic of ['database', 'deploy', 'cache', 'queue', 'release', 'logging']) {
    await service.api.request('POST', '/learn', { statement: `Project gamma GAMMA-${topic}: the ${topic} of gamma is documented in the ${topic} runbook.`, scope: 'project:gamma' })
  }
  await warm(service.api)
  host = await bootHost()
  await host.root.plugin(plur, { home, timeoutMs: TIMEOUT_MS, waitMs: WAIT_MS, turnWaitMs: WAIT_MS, autoStart: false })
  const cwd = join(home, 'work', 'gamma')
  await mkdir(cwd, { recursive: true })
  agent = (await host.createAgent('agent-gamma', cwd)).agent
})

after(async () => {
  service?.proc.kill('SIGCONT')
  await host?.close()
  await service?.stop()
  await removeHome(home)
})

/** One turn; resolves with the refresh outcome, the section after it, the model's prompt, and
 * whether the turn finished before the refresh settled. */
async function turn (text) {
  const before = host.model.requests.length
  let settled = false
  const refreshed = nextRefresh(host.root, agent.id)
  refreshed.then(() => { settled = true }, () => {})
  await host.say(agent, text)
  const turnEndedFirst = !settled
  const refresh = await refreshed
  const assembly = await host.assembleFor(agent)
  assert.doesNotThrow(() => renderPrompt(assembly))
  return { refresh, section: memorySection(assembly), system: host.model.requests[before].system, turnEndedFirst }
}

let kept
test('a healthy service: the block lands and is replaced per topic', async () => {
  const first = await turn('Tell me about the database.')
  assert.equal(first.refresh.outcome, 'replaced', first.refresh.error?.message)
  const second = await turn('And the deploy?')
  assert.equal(second.refresh.outcome, 'replaced', second.refresh.error?.message)
  assert.ok(second.section.includes('GAMMA-deploy'))
  kept = second.section
})

test('a slow service (process stopped): each refresh times out, the previous block stays byte-identical, turns do not wait', async () => {
  service.proc.kill('SIGSTOP')
  try {
    for (const topic of ['cache', 'queue']) {
      const r = await turn(`What about the ${topic}?`)
      assert.equal(r.refresh.outcome, 'failed')
      assert.equal(r.refresh.error.code, 'TIMEOUT', r.refresh.error.message)
      assert.equal(r.turnEndedFirst, true, 'the turn finished while the refresh still waited on the stopped service')
      assert.equal(r.section, kept, 'previous block kept byte-identical')
      assert.equal(r.system.split('<plur-memory>').length - 1, 1, 'the model still sees the previous block, once')
      assert.ok(r.system.includes(kept))
    }
  } finally {
    service.proc.kill('SIGCONT')
  }
  const back = await turn('What about the logging?')
  assert.equal(back.refresh.outcome, 'replaced', 'the service answers again once resumed')
  assert.ok(back.section.includes('GAMMA-logging'))
  kept = back.section
})

test('a dead service: refresh fails as UNREACHABLE, block kept; tools and /plur report an error result instead of throwing', async () => {
  const exited = new Promise((resolve) => service.proc.once('exit', resolve))
  service.proc.kill('SIGKILL')
  await exited
  const r = await turn('And the database again?')
  assert.equal(r.refresh.outcome, 'failed')
  assert.ok(['UNREACHABLE', 'TIMEOUT'].includes(r.refresh.error.code), r.refresh.error.message)
  assert.equal(r.section, kept)
  const done = await host.root.commands.execute(agent, '/plur status', [], AbortSignal.timeout(20000))
  assert.equal(done.result.kind, 'error')
  assert.match(done.result.text, /unreachable|did not answer/)
  const result = await host.root.tools.execute({ callId: 'c-dead', name: 'plur_status', arguments: {}, agent, signal: AbortSignal.timeout(20000) })
  assert.equal(result.isError, true)
  assert.match(result.content[0].text, /^Error: plur service/)
})

test('a restarted service (new port, new token) is found again without restarting the host', async () => {
  service = await startPlur(home)
  await warm(service.api)
  const r = await turn('What about the cache?')
  assert.equal(r.refresh.error, undefined)
  assert.equal(r.refresh.outcome, 'replaced')
  assert.ok(r.section.includes('GAMMA-cache'))
})

test('no service at all and auto-start off: the plugin boots, the block says in one line that memory is off and why, nothing throws', async () => {
  const empty = await tempHome()
  const other = await bootHost()
  try {
    await other.root.plugin(plur, { home: empty, autoStart: false })
    const lone = (await other.createAgent('agent-lone', empty)).agent
    const refreshed = nextRefresh(other.root, lone.id)
    await other.say(lone, 'Anything about the database?')
    const refresh = await refreshed
    assert.equal(refresh.outcome, 'replaced', 'the block is the one-line note')
    assert.equal(refresh.error.code, 'NO_SERVICE')
    assert.match(refresh.error.message, /plur serve/)
    assert.match(memorySection(await other.assembleFor(lone)), /^<plur-memory>\nplur memory is off: no plur service for home .*; start one with `plur serve` or `plur service start`; or set the plugin's autoStart to true\n<\/plur-memory>$/)
  } finally {
    await other.close()
    await removeHome(empty)
  }
})
