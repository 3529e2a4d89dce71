// The test that matters: a 60-turn session of two agents on a real DeepSeek Harness host (the
// published registries and agent loop) against a real `plur serve` holding real engrams. Every
// assertion is on what the host really produced: `systemPrompt.assemble()` and the system prompt
// the loop rendered for the model.
import './support/es2024.js'
import assert from 'node:assert/strict'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { renderPrompt } from '@deepseek-ai/dsh-system-prompt'
import plur from '../src/index.js'
import { bootHost, memorySection, nextRefresh } from './support/host.js'
import { removeHome, startPlur, tempHome, warm } from './support/plur.js'

const TURNS = 60
const TOPICS = ['database', 'deploy', 'testing', 'logging', 'auth', 'frontend', 'cache', 'queue', 'release', 'docs', 'style', 'monitoring']
const FACTS = {
  database: 'the database is PostgreSQL 16 with one read replica',
  deploy: 'deploy runs from the main branch through a blue-green switch',
  testing: 'testing uses pytest with a real database in a container',
  logging: 'logging goes to JSON lines shipped to Loki',
  auth: 'auth uses short-lived OAuth tokens refreshed by the gateway',
  frontend: 'the frontend is React with server-side rendering',
  cache: 'the cache is Redis with a five minute expiry',
  queue: 'the queue is RabbitMQ with one dead-letter exchange',
  release: 'release happens every second Tuesday after a freeze',
  docs: 'docs live in the repository and are built with Sphinx',
  style: 'style follows black with a line length of 100',
  monitoring: 'monitoring alerts page the on-call engineer through Grafana',
}
// Everything DSH's renderer treats specially ({{name}} groups, malformed groups, a stray }}),
// plus what plur's block escapes (< > & `) and what other template engines would (${...}).
const TEMPLATE_TRAP = 'The deploy templates use {{model}} and {{ cwd }} and {{unknown_var}} and {{{provider}}} ' +
  'placeholders, ${HOME} paths, `make deploy`, <b>bold</b> & }} stray braces {{'

let service, home, host, alpha, beta, root
const transcript = []

before(async () => {
  home = await tempHome()
  service = await startPlur(home)
  const learn = (statement, scope) => service.api.request('POST', '/learn', { statement, scope })
  const notes = ['first noted at the kickoff', 'confirmed in the last review', 'written down in the runbook']
  for (const topic of TOPICS) {
    for (const [i, note] of notes.entries()) {
      await learn(`Project alpha ALPHA-${topic}-${i}: for ${topic}, ${FACTS[topic]}; ${note}.`, 'project:alpha')
      await learn(`Project beta BETA-${topic}-${i}: for ${topic}, ${FACTS[topic].replace(/the /, 'the beta ')}; ${note}.`, 'project:beta')
    }
  }
  await learn(`ALPHA-template: ${TEMPLATE_TRAP}`, 'project:alpha')
  await service.api.request('POST', '/learn', { statement: 'GLOBAL-name: the user is called Lin and prefers short answers.', scope: 'global', pinned: true })
  // Warm the service (first dense recall loads the model) so turn timing is the steady state.
  await warm(service.api)

  host = await bootHost()
  root = host.root
  // Generous bounds: a shared 2-core CI machine (the defaults are 5000 / 1500 / 250 ms).
  await root.plugin(plur, { capture: 'off', home, timeoutMs: 15000, waitMs: 15000, turnWaitMs: 15000 })
  const work = join(home, 'work')
  await mkdir(join(work, 'alpha'), { recursive: true })
  await mkdir(join(work, 'beta'), { recursive: true })
  alpha = (await host.createAgent('agent-alpha', join(work, 'alpha'))).agent
  beta = (await host.createAgent('agent-beta', join(work, 'beta'))).agent
})

after(async () => {
  await host?.close()
  await service?.stop()
  await removeHome(home)
})

/** The message of turn n (1-based): topics cycle; turns 40-43 repeat one message (hash gate). */
function messageOf (n) {
  const topic = n >= 40 && n <= 43 ? 'deploy' : TOPICS[n % TOPICS.length]
  return `How do we handle ${topic} in this project? (${topic})`
}

test(`${TURNS}-turn session, two agents, real host, real plur serve`, async (t) => {
  const state = new Map([[alpha.id, { own: 'ALPHA-', other: 'BETA-', sections: [], systems: [] }], [beta.id, { own: 'BETA-', other: 'ALPHA-', sections: [], systems: [] }]])
  let maxSection = 0
  let templateSeen = 0
  // Figures only (never asserted): ms from the claimed user message to the settled refresh, and
  // the cost of one assemble() call.
  const started = new Map()
  const latencies = []
  const assembleMs = []
  root.on('agent/inbox/claimed', (payload) => { started.set(payload.agent.id, performance.now()) })
  root.on('plur/refresh', (payload) => { latencies.push(performance.now() - started.get(payload.agent.id)) })
  // What the bounded wait added to each turn's first model request (plur/show), first turn apart.
  const shows = []
  root.on('plur/show', (payload) => { shows.push(payload) })
  let baseLength
  for (let n = 1; n <= TURNS; n++) {
    for (const agent of [alpha, beta]) {
      const s = state.get(agent.id)
      const message = messageOf(n)
      const requestsBefore = host.model.requests.length
      const refreshed = nextRefresh(root, agent.id)
      const showsBefore = shows.length
      await host.say(agent, message)
      const refresh = await refreshed
      const requests = host.model.requests.slice(requestsBefore)
      assert.equal(requests.length, 1, 'one model request per turn')
      const system = requests[0].system
      const t0 = performance.now()
      const assembly = await host.assembleFor(agent)
      assembleMs.push(performance.now() - t0)
      const section = memorySection(assembly)
      const bare = await root.systemPrompt.assemble()
      const row = { turn: n, agent: agent.id, refresh: refresh.outcome, sectionChars: section.length, systemChars: system.length, error: refresh.error?.message }
      transcript.push(row)
      await t.test(`turn ${n} ${agent.id}: ${refresh.outcome}, section ${section.length} chars, model prompt ${system.length} chars`, () => {
        assert.equal(refresh.error, undefined, 'the refresh reached the service')
        const shown = shows.slice(showsBefore).filter((x) => x.agent.id === agent.id)
        assert.equal(shown.length, 1, 'one new block shown per user turn')
        assert.equal(shown[0].first, n === 1, 'the first show is the first turn\'s')
        assert.equal(shown[0].settled, true, 'the refresh landed within the (generous) bound')
        assert.equal(refresh.scope, agent === alpha ? 'project:alpha' : 'project:beta', 'scope from the session cwd')
        // Present from the first request on, exactly once (replaced, never appended), recalled for
        // this turn's message: the model saw the block assemble() returns after the turn.
        assert.equal(system.split('<plur-memory>').length - 1, 1, 'exactly one memory block in the prompt')
        assert.equal(system.split('</plur-memory>').length - 1, 1)
        assert.ok(system.includes(section), 'the model saw this turn\'s block')
        if (n === 1) baseLength = system.length - section.length
        assert.ok(system.length <= baseLength + section.length + 2, `prompt bounded: ${system.length} <= ${baseLength} + ${section.length} + 2`)
        assert.ok(section.startsWith('<plur-memory>') && section.endsWith('</plur-memory>'), 'assemble() holds this turn\'s block')
        assert.ok(section.includes(s.own), 'the agent sees its own project\'s engrams')
        assert.ok(section.includes('GLOBAL-name'), 'the pinned global engram is in every scope\'s block')
        // Scope isolation: never the other project's engrams, in the section or in the model prompt.
        assert.equal(section.includes(s.other), false, `no ${s.other} engram in ${agent.id}'s section`)
        assert.equal(system.includes(s.other), false, `no ${s.other} engram in ${agent.id}'s model prompt`)
        // Template safety: no brace pair survives, and the host's strict renderer accepts the prompt.
        assert.equal(/\{\{|\}\}/.test(section), false, 'no {{ or }} in the section')
        assert.doesNotThrow(() => renderPrompt(assembly))
        assert.ok(renderPrompt(assembly).includes(section), 'rendering leaves the section verbatim')
        if (section.includes('ALPHA-template')) {
          templateSeen += 1
          assert.ok(section.includes('{ {model} } and { { cwd } } and { {unknown_var} } and { { {provider} } }'), 'braces split, words kept')
          assert.equal(system.includes('scripted-1 and'), false, '{{model}} was not interpolated with the model name')
        }
        // No agent, no memory: the diagnostic (agent-less) assembly gets ''.
        assert.equal(memorySection(bare), '', "'' without an agent")
        assert.doesNotThrow(() => renderPrompt(bare))
        // Hash gate: the same message gives the same hash, and the section stays byte-identical.
        if (n > 1 && messageOf(n - 1) === message) {
          assert.equal(refresh.outcome, 'unchanged')
          assert.equal(section, s.sections.at(-1), 'byte-identical section')
        } else if (n > 1) {
          assert.equal(refresh.outcome, 'replaced', 'a new topic replaces the block')
        }
        // Same message, same prompt: the prompt depends on this turn's message only, not on how
        // many turns came before (nothing accumulates).
        for (let m = 1; m < n; m++) {
          if (messageOf(m) === message) assert.equal(system, s.systems[m - 1], `prompt of turn ${n} is byte-identical to turn ${m}'s`)
        }
      })
      s.sections.push(section)
      s.systems.push(system)
      maxSection = Math.max(maxSection, section.length)
    }
  }
  // Over the whole session: the longest prompt is no longer than the base plus one block.
  for (const s of state.values()) {
    const longest = Math.max(...s.systems.map((x) => x.length))
    assert.ok(longest <= baseLength + maxSection + 2, `longest prompt ${longest} <= ${baseLength} + ${maxSection} + 2`)
    const late = s.systems.slice(-12).map((x) => x.length)
    const early = s.systems.slice(0, 12).map((x) => x.length)
    assert.deepEqual([...late].sort((a, b) => a - b), [...early].sort((a, b) => a - b), 'the last 12 prompts have the lengths of turns 1-12: no growth')
  }
  assert.ok(templateSeen >= 5, `the engram with template syntax was in ${templateSeen} blocks`)
  const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))].toFixed(2)
  t.diagnostic(`user message claimed -> block settled ms: p50=${pct(latencies, 0.5)} p95=${pct(latencies, 0.95)} (n=${latencies.length}); assemble() ms: p50=${pct(assembleMs, 0.5)} p95=${pct(assembleMs, 0.95)}`)
  const waits = (first) => shows.filter((x) => x.first === first).map((x) => x.waitedMs)
  t.diagnostic(`wait added to a turn's first request, ms: first turn ${waits(true).map((x) => x.toFixed(1)).join(', ')}; later turns p50=${pct(waits(false), 0.5)} p95=${pct(waits(false), 0.95)} max=${Math.max(...waits(false)).toFixed(1)} (n=${waits(false).length})`)
  t.diagnostic(`turns=${TURNS} agents=2 max_section_chars=${maxSection} base_prompt_chars=${baseLength}`)
  t.diagnostic(`refresh outcomes: ${JSON.stringify(transcript.reduce((acc, r) => ({ ...acc, [r.refresh]: (acc[r.refresh] ?? 0) + 1 }), {}))}`)
})
