// Memory is never silently off: with no service the plugin starts one (the configured plur command)
// and memory shows from the next turn; when it cannot, the first request's block says so and why,
// and an error is logged. And the switch: DSH's settings seam turns memory off (no block, no plur
// tools) and on again. Real host registries, real `plur` processes.
import './support/es2024.js'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, test } from 'node:test'
import plur from '../src/index.js'
import { bootHost, memorySection, memorySettings, nextRefresh } from './support/host.js'
import { PYTHON, removeHome, startPlur, tempHome, warm } from './support/plur.js'

const homes = []
after(async () => {
  for (const home of homes) {
    try { execFileSync(PYTHON, ['-m', 'plur', '--home', home, 'service', 'stop'], { env: { ...process.env, HF_HUB_OFFLINE: '1' } }) } catch {}
    await removeHome(home)
  }
})

async function homeWith (statements) {
  const home = await tempHome()
  homes.push(home)
  for (const statement of statements) {
    execFileSync(PYTHON, ['-m', 'plur', '--home', home, 'learn', '--scope', 'global', statement], { env: { ...process.env, HF_HUB_OFFLINE: '1', PLUR_AUTOSTART_SERVICE: '0' } })
  }
  return home
}

const errors = (host) => host.root.logger.buffer.filter((m) => m.name === 'plur' && m.type === 'error').map((m) => m.args.map(String).join(' '))

test('plurCommand pointing nowhere: the first request\'s block says memory is off and why, and an error is logged', async () => {
  const home = await homeWith(['BISCUIT: Lin\'s dog is called Biscuit.'])
  const host = await bootHost()
  try {
    await host.root.plugin(plur, { home, plurCommand: '/nowhere/bin/plur', waitMs: 20000 })
    const agent = (await host.createAgent('agent-off', home)).agent
    const before = host.model.requests.length
    await host.say(agent, 'What is my dog called?')
    const system = host.model.requests[before].system
    const block = /<plur-memory>\n(.*)\n<\/plur-memory>/.exec(system)
    assert.ok(block, `a one-line block in the first request:\n${system}`)
    assert.match(block[1], /^plur memory is off: the plur service is not running and could not be started with \/nowhere\/bin\/plur --home \S+ service start --port 0 --auto \(cannot run "\/nowhere\/bin\/plur" \(ENOENT: not found\)\); set the plugin's plurCommand to the plur program, or run `plur service start`$/)
    const deadline = Date.now() + 30000
    while (errors(host).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    assert.match(errors(host).join('\n'), /plur memory is off: the plur service could not be started \(cannot run "\/nowhere\/bin\/plur" \(ENOENT: not found\)\)/)
  } finally {
    await host.close()
  }
})

test('no service running: the plugin starts one with plurCommand; the next turn\'s first request carries the block', async () => {
  const home = await homeWith(['BISCUIT: Lin\'s dog is called Biscuit.', 'PORTO: Lin moved to Porto in 2024.'])
  const host = await bootHost()
  try {
    await host.root.plugin(plur, { home, plurCommand: [PYTHON, '-m', 'plur'], waitMs: 20000, turnWaitMs: 20000, timeoutMs: 20000 })
    const agent = (await host.createAgent('agent-start', home)).agent
    let before = host.model.requests.length
    await host.say(agent, 'What is my dog called?')
    assert.match(host.model.requests[before].system, /<plur-memory>\nplur memory is starting: the plur service was not running, so this session started it \(.* service start --port 0 --auto\); memory shows from the next turn\n<\/plur-memory>/)
    // the start command ends when the service answers (or fails): wait for that, with a generous deadline
    const deadline = Date.now() + 180000
    let info
    while (info === undefined && Date.now() < deadline) {
      try { info = JSON.parse(await readFile(join(home, 'service.json'), 'utf8')) } catch { await new Promise((resolve) => setTimeout(resolve, 200)) }
    }
    assert.ok(info, 'service.json written by the service the plugin started')
    assert.equal(info.idle_exit_s, 10800, 'it exits after service_idle_exit_s without a request, as plur\'s own auto-start')
    const api = (await startPlurClient(home))
    await warm(api)
    before = host.model.requests.length
    await host.say(agent, 'What is my dog called?')
    assert.match(host.model.requests[before].system, /<plur-memory>[\s\S]*BISCUIT: Lin's dog is called Biscuit[\s\S]*<\/plur-memory>/, 'the next turn\'s first request carries the block')
    assert.deepEqual(errors(host), [])
  } finally {
    await host.close()
  }
})

async function startPlurClient (home) {
  const { PlurClient } = await import('../src/client.js')
  return new PlurClient({ home, timeoutMs: 60000 })
}

test('DSH\'s settings seam: enabled off means no block and no plur tools in the next request; on again brings both back; capture is kept there', async () => {
  const home = await tempHome()
  homes.push(home)
  const service = await startPlur(home)
  const host = await bootHost()
  try {
    await service.api.request('POST', '/learn', { statement: 'BISCUIT: Lin\'s dog is called Biscuit.', scope: 'global' })
    await warm(service.api)
    const seam = await memorySettings(host.root, {})
    await host.root.plugin(plur, { capture: 'off', home, waitMs: 20000, turnWaitMs: 20000, timeoutMs: 20000, autoStart: false })
    const agent = (await host.createAgent('agent-switch', home)).agent
    const plurTools = () => host.root.tools.schemas().map((s) => s.name).filter((n) => n.startsWith('plur_'))
    const ask = async () => {
      const before = host.model.requests.length
      await host.say(agent, 'What is my dog called?')
      return host.model.requests[before]
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.deepEqual(host.root.settings.get('plur'), { enabled: true, capture: 'off', scope: 'cwd' }, 'the namespace resolves to the profile config')
    assert.match((await ask()).system, /BISCUIT/)
    assert.equal(plurTools().length, 8)

    await host.root.settings.update('plur', { enabled: false })
    assert.deepEqual(seam.document().plur, { enabled: false }, 'stored in the user\'s settings document')
    const off = await ask()
    assert.doesNotMatch(off.system, /plur-memory/, 'no block')
    assert.deepEqual(plurTools(), [], 'no plur tools')
    assert.equal(memorySection(await host.assembleFor(agent)), '')

    // an edit of the settings document from outside (the file provider's watcher publishes it)
    host.root.settings.edit({ plur: { enabled: true } })
    await new Promise((resolve) => setTimeout(resolve, 50))
    const refreshed = nextRefresh(host.root, agent.id)
    assert.match((await ask()).system, /BISCUIT/, 'on again: the block is back')
    await refreshed
    assert.equal(plurTools().length, 8, 'and the tools')

    const capture = await host.root.commands.execute(agent, '/plur capture on', [], AbortSignal.timeout(20000))
    assert.match(capture.result.text, /Capture on \(saved in DSH settings, namespace plur\)/)
    assert.equal(seam.document().plur.capture, 'user')
    await assert.rejects(host.root.settings.update('plur', { scope: 'nowhere' }), /plur.scope "nowhere" is invalid/)
  } finally {
    await host.close()
    await service.stop()
  }
})
