/**
 * plur memory for DeepSeek Harness: a Cordis plugin.
 *
 * - ONE prompt section, `plur:memory` (order 120), whose text is a synchronous function of the
 *   assembly: the cached block of `assembly.agent.id`, `''` without an agent. It never awaits and
 *   never does I/O, so an assembly is never delayed by memory.
 * - On every accepted `agent/pre-step` the plugin asks the local plur service (`POST /api/v1/block`)
 *   for the block of the latest user message, fire-and-forget. The reply replaces the agent's entry
 *   only when its hash differs, so an unchanged block keeps the prompt (and the host's KV-cache
 *   prefix) byte-identical. The block therefore lands from the second assembly of a session on.
 * - `agent/disposed` drops the agent's entry and aborts its in-flight refreshes; plugin disposal
 *   (through `ctx.effect`) drops every entry.
 * - Tools (`plur_recall`, `plur_learn`, `plur_forget`, `plur_feedback`, `plur_status`), a `/plur`
 *   command and a `plur-memory` skill, each mounted in its own `ctx.inject([...])` fiber, so the
 *   plugin boots on a profile that composes no tool, command or skill registry.
 *
 * A slow or dead service never throws into the host: a refresh that fails or times out keeps the
 * previous block; tools and the command report the failure as their own error result.
 *
 * @module @plur-ai/dsh
 */
import { BlockCache } from './cache.js'
import { PlurClient, resolveHome } from './client.js'
import { registerCommand } from './command.js'
export { latestUserText, MAX_QUERY_CHARS, scopeFor, SCOPE_RE } from './scope.js'
import { SKILL } from './skill.js'
import { latestUserText, SCOPE_RE, scopeFor } from './scope.js'
import { registerTools } from './tools.js'

/** Cordis plugin name. */
export const name = 'plur'
/** The only service the plugin needs; tools, commands and skills are optional (see `apply`). */
export const inject = ['systemPrompt']
/** The section's name and order (tool guidance uses 100-199 in DSH's order bands). */
export const SECTION_NAME = 'plur:memory'
export const SECTION_ORDER = 120
/** Event emitted after each refresh settles: `(payload: RefreshOutcome) => void`. */
export const REFRESH_EVENT = 'plur/refresh'

const DEFAULTS = Object.freeze({ home: undefined, scope: 'cwd', timeoutMs: 5000, toolTimeoutMs: 15000 })

/**
 * Validate the plugin config; unknown keys and bad values fail at load, naming the value and the fix.
 * @param {Record<string, unknown> | undefined} config - `{home?, scope?, timeoutMs?, toolTimeoutMs?}`:
 *   `home` the plur home (default `$PLUR_HOME`, else `~/.plur`); `scope` `'cwd'` (default: each agent
 *   gets `project:<basename of its session cwd>`, `global` without a cwd) or one fixed plur scope
 *   (`global`, `project:<name>`, `agent:<name>`); `timeoutMs` the block refresh timeout (ms, default
 *   5000); `toolTimeoutMs` the tool/command request timeout (ms, default 15000).
 * @returns {{home: string, scope: string, timeoutMs: number, toolTimeoutMs: number}} the settings.
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

  const refresh = (agent, messages) => {
    const query = latestUserText(messages)
    if (query === '') return
    const ticket = cache.begin(agent.id)
    const scope = scopeFor(agent, settings.scope)
    client.request('POST', '/block', { agent_id: agent.id, query, scope }, { signal: ticket.controller.signal })
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
        if (live) ctx.emit(REFRESH_EVENT, { agent, scope, outcome, hash: cache.hash(agent.id), error })
      })
      .catch((error) => { logger.warn('plur refresh listener failed: %o', error) })
  }

  ctx.on('agent/pre-step', async (payload, next) => {
    const decision = await next()
    try {
      if (decision?.kind === 'enter' && !payload.signal?.aborted) refresh(payload.agent, decision.messages)
    } catch (error) {
      logger.warn('plur refresh not started: %o', error)
    }
    return decision
  })

  ctx.on('agent/disposed', ({ agent }) => {
    if (agent?.id !== undefined) cache.clear(agent.id)
  })

  const tools = new PlurClient({ home: settings.home, timeoutMs: settings.toolTimeoutMs })
  ctx.inject(['tools'], (scoped) => registerTools(scoped, tools, settings))
  ctx.inject(['commands'], (scoped) => registerCommand(scoped, tools, cache, settings))
  ctx.inject(['skills'], (scoped) => { scoped.skills.register(SKILL) })
}

export default { name, inject, apply }
