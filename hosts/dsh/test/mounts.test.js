// Two mounts of the plugin in one host (a personal-only row beside a project one), and PLUR_CAPTURE in DSH's
// environment: on the real host registries and a real `plur serve` (issue 48).
import './support/es2024.js'
import assert from 'node:assert/strict'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import plur, { CAPTURE_EVENT } from '../src/index.js'
import { captureFromEnv } from '../src/settings.js'
import { bootHost } from './support/host.js'
import { PYTHON, removeHome, startPlur, tempHome, warm } from './support/plur.js'

let home, service
const hosts = []

before(async () => {
  home = await tempHome()
  service = await startPlur(home)
  await service.api.request('POST', '/learn', { statement: 'MU-deploy: the mu service deploys with make ship.', scope: 'project:mu' })
  await service.api.request('POST', '/learn', { statement: 'GLOBAL-dog: the user\'s dog is called Biscuit.', scope: 'global', type: 'user' })
  await warm(service.api)
})

after(async () => {
  for (const host of hosts) await host.close()
  await service?.stop()
  await removeHome(home)
})

const base = { home, timeoutMs: 15000, waitMs: 15000, turnWaitMs: 15000, autoStart: false, plurCommand: [PYTHON, '-m', 'plur'] }

async function hostWith (...configs) {
  const host = await bootHost()
  hosts.push(host)
  for (const config of configs) await host.root.plugin(plur, { ...base, home, ...config })
  return host
}

/** The next `count` capture events of `agentId`, each with its request settled. */
function captures (root, agentId, count) {
  return new Promise((resolve) => {
    const seen = []
    const off = root.on(CAPTURE_EVENT, (event) => {
      if (event.agent.id !== agentId) return
      seen.push(event)
      if (seen.length === count) { off(); Promise.all(seen.map((e) => e.sent)).then(() => resolve(seen)) }
    })
  })
}

test('two mounts in one host: each has its own section (plur:memory, plur:memory:2), the personal-only one shows only global notes, and a typed message is captured once', async () => {
  const host = await hostWith({ capture: 'user' }, { scope: 'global', capture: 'user' })
  const cwd = join(home, 'work', 'mu')
  await mkdir(cwd, { recursive: true })
  const agent = (await host.createAgent('agent-mu', cwd)).agent
  const captured = captures(host.root, agent.id, 2)
  // a statement, not a question: a turn that only asks is never stored (issue 46)
  await host.say(agent, 'MU-CAPTURE: the mu service deploys with make ship, and my dog Biscuit watches it.')
  const sections = Object.fromEntries((await host.assembleFor(agent)).sections.filter((s) => s.name.startsWith('plur:memory')).map((s) => [s.name, s.text]))
  assert.deepEqual(Object.keys(sections).sort(), ['plur:memory', 'plur:memory:2'])
  assert.match(sections['plur:memory'], /MU-deploy/)
  assert.match(sections['plur:memory:2'], /GLOBAL-dog/)
  assert.doesNotMatch(sections['plur:memory:2'], /MU-deploy/, 'personal-only: global notes alone')
  const events = await captured
  assert.deepEqual(events.map((e) => e.skipped).sort(), ['', 'another plur mount captures'])
  const stored = (await service.api.request('POST', '/list', { text: 'MU-CAPTURE', limit: 5 })).engrams
  assert.equal(stored.length, 1, 'captured once, by the first mount')
})

test('PLUR_CAPTURE=off in DSH\'s environment: nothing is captured, whatever the config or /plur capture says', async () => {
  process.env.PLUR_CAPTURE = 'off'
  let host
  try {
    host = await hostWith({ capture: 'user' })
  } finally {
    delete process.env.PLUR_CAPTURE
  }
  const cwd = join(home, 'work', 'nu')
  await mkdir(cwd, { recursive: true })
  const agent = (await host.createAgent('agent-nu', cwd)).agent
  const command = (line) => host.root.commands.execute(agent, line, [], AbortSignal.timeout(20000)).then((r) => r.result)
  let seen = captures(host.root, agent.id, 1)
  await host.say(agent, 'NU-CAPTURE: the nu staging box is called fig.')
  assert.equal((await seen)[0].skipped, 'PLUR_CAPTURE=off')
  assert.match((await command('/plur status')).text, /capture off \(PLUR_CAPTURE in DSH's environment\)\./)
  assert.match((await command('/plur capture on')).text, /PLUR_CAPTURE=off in DSH's environment keeps capture off/)
  seen = captures(host.root, agent.id, 1)
  await host.say(agent, 'NU-CAPTURE: the nu backup box is called date.')
  assert.equal((await seen)[0].skipped, 'PLUR_CAPTURE=off')
  assert.deepEqual((await service.api.request('POST', '/list', { text: 'NU-CAPTURE', limit: 5 })).engrams, [])
})

test('captureFromEnv: user, all, off (any case); unset or empty is no override; anything else fails the load in one line', () => {
  assert.equal(captureFromEnv({}), undefined)
  assert.equal(captureFromEnv({ PLUR_CAPTURE: '' }), undefined)
  assert.equal(captureFromEnv({ PLUR_CAPTURE: 'OFF' }), 'off')
  assert.equal(captureFromEnv({ PLUR_CAPTURE: 'all' }), 'all')
  assert.throws(() => captureFromEnv({ PLUR_CAPTURE: 'maybe' }), /PLUR_CAPTURE="maybe" is invalid: use user, all, off/)
})
