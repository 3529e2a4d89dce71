/**
 * plur memory for DeepSeek Harness: a Cordis plugin.
 *
 * - ONE prompt section, `plur:memory` (order 120), whose text is a synchronous function of the
 *   assembly: the block shown to `assembly.agent.id`, `''` without an agent. It never does I/O.
 * - When the agent loop claims a message the user typed (`agent/inbox/claimed` with
 *   `source.kind === 'user'`; never plugin reminders, loop-guard nudges or tool results), the
 *   plugin asks the local plur service (`POST /api/v1/block`) for the block of that text.
 * - The loop assembles the prompt right after claiming. At that first assembly after a user
 *   message (`system-prompt/assemble`), the plugin waits for the refresh, bounded: `waitMs` (1500)
 *   on the agent's first assembly (a session's first request, a headless one-shot), `turnWaitMs`
 *   (1000) on later turns; a warm service answers in ~10-20 ms. Past the bound the turn goes on
 *   with the previous block. The shown block changes only there: every model request of one turn
 *   carries the same block, so the system prompt (and the host's KV-cache prefix) stays
 *   byte-identical across a turn's steps; a refresh that lands late is shown from the next turn.
 *   An unchanged hash keeps the text byte-identical across turns too.
 * - `agent/disposed` drops the agent's entry and aborts its in-flight refreshes; plugin disposal
 *   (through `ctx.effect`) drops every entry.
 * - Tools (`plur_recall`, `plur_learn`, `plur_forget`, `plur_feedback`, `plur_status`), a `/plur`
 *   command and a `plur-memory` skill, each mounted in its own `ctx.inject([...])` fiber, so the
 *   plugin boots on a profile that composes no tool, command or skill registry. A mount that
 *   fails is logged once through the host's logger.
 *
 * A slow or dead service never throws into the host: a refresh that fails or times out keeps the
 * previous block; tools and the command report the failure as their own error result.
 *
 * @module @plur-ai/dsh
 */
import { BlockCache } from './cache.js'
import { PlurClient, resolveHome } from './client.js'
import { registerCommand } from './command.js'
export { latestUserText, MAX_QUERY_CHARS, scopeFor, SCOPE_RE, userText } from './scope.js'
import { SKILL } from './skill.js'
import { SCOPE_RE, scopeFor, userText } from './scope.js'
import { registerTools } from './tools.js'

/** Cordis plugin name. */
export const name = 'plur'
/** The only service the plugin needs; tools, commands and skills are optional (see `apply`). */
export const inject = ['systemPrompt']
/** The section's name and order (tool guidance uses 100-199 in DSH's order bands). */
export const SECTION_NAME = 'plur:memory'
export const SECTION_ORDER = 120
/**
 * Event emitted after each refresh settles: `({agent, query, scope, outcome, hash, error,
 * roundTripMs, serviceMs}) => void` (ms: the plugin's request, and the service's own `took_ms`).
 */
export const REFRESH_EVENT = 'plur/refresh'
/**
 * Event emitted when a new block is shown (the first assembly after a user message):
 * `({agent, first, waitedMs, settled, changed, hash}) => void`; `waitedMs` is what the wait added
 * to that model request, `settled` whether the refresh landed within the bound.
 */
export const SHOW_EVENT = 'plur/show'

const DEFAULTS = Object.freeze({ home: undefined, scope: 'cwd', timeoutMs: 5000, toolTimeoutMs: 15000, waitMs: 1500, turnWaitMs: 1000 })

/**
 * Validate the plugin config; unknown keys and bad values fail at load, naming the value and the fix.
 * @param {Record<string, unknown> | undefined} config - `{home?, scope?, timeoutMs?, toolTimeoutMs?,
 *   waitMs?, turnWaitMs?}`: `home` the plur home (default `$PLUR_HOME`, else `~/.plur`); `scope`
 *   `'cwd'` (default: each agent gets `project:<basename of its session cwd>`, `global` without a
 *   cwd) or one fixed plur scope (`global`, `project:<name>`, `agent:<name>`); `timeoutMs` the block
 *   refresh timeout (ms, default 5000); `toolTimeoutMs` the tool/command request timeout (ms,
 *   default 15000); `waitMs` the longest wait for the block at an agent's first assembly (ms,
 *   default 1500, 0 = never wait); `turnWaitMs` the same at the first assembly of each later turn
 *   (ms, default 1000, 0 = show a turn's block from the next turn on).
 * @returns {{home: string, scope: string, timeoutMs: number, toolTimeoutMs: number, waitMs: number, turnWaitMs: number}} the settings.
 * @throws {Error} on an unknown key or a bad value.
 */
export function resolveConfig (config = {}) {
  if (config === null || typeof config !== 'object') throw new TypeError(`@plur-ai/dsh config must be an object, got ${JSON.stringify(config)}`)
  const unknown = Object.keys(config).filter((key) => !(key in DEFAULTS))
  if (unknown.length > 0) throw new Error(`@plur-ai/dsh config has unknown key(s) ${unknown.join(', ')}; the keys are ${Object.keys(DEFAULTS).join(', ')}`)
  const settings = { ...DEFAULTS, ...Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined)) }
  if (settings.home !== undefined && typeof settings.home !== 'string') throw new TypeError(`@plur-ai/dsh config.home must be a path string, got ${JSON.stringify(settings.home)}`)
  if (settings.scope !== 'cwd' && !(typeof settings.scope === 'string' && SCOPE_RE.test(settings.scope))) {
    throw new Error(`@plur-ai/dsh config.scope ${JSON.stringify(settings.scope)} is invalid: use 'cwd', 'global', 'project:<name>' or 'agent:<name>'`)
  }
  for (const key of ['timeoutMs', 'toolTimeoutMs']) {
    const value = settings[key]
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new Error(`@plur-ai/dsh config.${key} must be a positive number of milliseconds, got ${JSON.stringify(value)}`)
  }
  for (const key of ['waitMs', 'turnWaitMs']) {
    const value = settings[key]
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new Error(`@plur-ai/dsh config.${key} must be a number of milliseconds >= 0, got ${JSON.stringify(value)}`)
  }
  return { ...settings, home: resolveHome(settings.home) }
}

/**
 * Plugin body (`ctx.plugin(plur, config)`).
 * @param {import('@deepseek-ai/cordis').Context} ctx - the plugin context (with `systemPrompt`).
 * @param {Record<string, unknown>} [config] - see {@link resolveConfig}.
 */
export function apply (ctx, config) {
  const settings = resolveConfig(config)
  const logger = ctx.logger('plur')
  const client = new PlurClient({ home: settings.home, timeoutMs: settings.timeoutMs })
  const cache = new BlockCache()
  let live = true
  let lastProblem = ''

  ctx.effect(() => () => {
    live = false
    cache.clearAll()
  }, 'plur: drop every memory block')

  ctx.systemPrompt.section({
    name: SECTION_NAME,
    order: SECTION_ORDER,
    text: (assembly) => {
      const id = assembly.agent?.id
      return id === undefined ? '' : cache.read(id)
    },
  })

  const refresh = (agent, query) => {
    const t0 = performance.now()
    const ticket = cache.begin(agent.id)
    const scope = scopeFor(agent, settings.scope)
    client.request('POST', '/block', { agent_id: agent.id, query, scope, inject: true }, { signal: ticket.controller.signal })
      .then((reply) => {
        if (typeof reply?.text !== 'string' || typeof reply?.hash !== 'string') throw new Error(`plur /block answered without text/hash: ${JSON.stringify(reply).slice(0, 200)}`)
        return { reply, error: undefined }
      })
      .catch((error) => ({ reply: undefined, error }))
      .then(({ reply, error }) => {
        const outcome = cache.settle(ticket, reply)
        const problem = error === undefined ? '' : String(error.message ?? error)
        if (problem !== lastProblem && live && outcome !== 'stale') {
          if (problem !== '') logger.warn('memory block not refreshed, keeping the previous one: %s', problem)
          else logger.info('memory blocks refresh again')
          lastProblem = problem
        }
        const timing = { roundTripMs: performance.now() - t0, serviceMs: reply?.took_ms }
        if (live) ctx.emit(REFRESH_EVENT, { agent, query, scope, outcome, hash: cache.latest(agent.id).hash, error, ...timing })
      })
      .catch((error) => { logger.warn('plur refresh listener failed: %o', error) })
  }

  // The loop claims a step's messages, then assembles its prompt: a user message starts a refresh.
  ctx.on('agent/inbox/claimed', ({ agent, message }) => {
    try {
      const query = userText(message)
      if (query !== '' && agent?.id !== undefined) refresh(agent, query)
    } catch (error) {
      logger.warn('plur refresh not started: %o', error)
    }
  })

  // The first assembly after a user message waits (bounded) for its block, then shows it for the
  // whole turn. Other assemblies read the shown block unchanged.
  ctx.on('system-prompt/assemble', async (_assembly, context, next) => {
    const agent = context?.agent
    const id = agent?.id
    if (id === undefined || !cache.isFresh(id)) return next()
    const first = cache.shows(id) === 0
    const t0 = performance.now()
    const settled = await cache.settled(id, first ? settings.waitMs : settings.turnWaitMs, context.signal)
    const waitedMs = performance.now() - t0
    const changed = cache.show(id)
    if (live) ctx.emit(SHOW_EVENT, { agent, first, waitedMs, settled, changed, hash: cache.hash(id) })
    if (first) logger.debug('first memory block for %s: waited %s ms, %s', id, waitedMs.toFixed(1), settled ? 'landed' : 'not yet (shown from the next turn)')
    const assembled = await next()
    const text = cache.read(id)
    if (!assembled.sections.some((section) => section.name === SECTION_NAME && section.text !== text)) return assembled
    return { ...assembled, sections: assembled.sections.map((section) => section.name === SECTION_NAME ? { ...section, text } : section) }
  })

  ctx.on('agent/disposed', ({ agent }) => {
    if (agent?.id !== undefined) cache.clear(agent.id)
  })

  // Optional registries, each in its own fiber; a failure is logged once per kind, at error level
  // (Cordis exports errors at its default level; warnings only when the host raises it).
  const failed = new Set()
  const mount = (what, register) => (scoped) => {
    Promise.resolve()
      .then(() => register(scoped))
      .then((from) => { if (from !== undefined) logger.debug('plur %s mounted (%s)', what, from) })
      .catch((error) => {
        if (failed.has(what) || !live) return
        failed.add(what)
        logger.error(`plur ${what} not mounted: ${String(error?.message ?? error)}`)
      })
  }
  const tools = new PlurClient({ home: settings.home, timeoutMs: settings.toolTimeoutMs })
  ctx.inject(['tools'], mount('tools', (scoped) => registerTools(scoped, tools, settings)))
  ctx.inject(['commands'], mount('the /plur command', (scoped) => registerCommand(scoped, tools, cache, settings)))
  ctx.inject(['skills'], mount('the plur-memory skill', (scoped) => { scoped.skills.register(SKILL) }))
}

export default { name, inject, apply }
