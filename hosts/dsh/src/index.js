/**
 * plur memory for DeepSeek Harness: a Cordis plugin.
 *
 * - ONE prompt section, `plur:memory` (order 120), whose text is a synchronous function of the
 *   assembly: the block shown to `assembly.agent.id`, `''` without an agent. It never does I/O. A second
 *   mount in the same host (a personal-only row beside a project one) gets `plur:memory:2`; the first
 *   mount keeps the tools, command, skill, settings and card, and is the one that captures for its home.
 * - `PLUR_CAPTURE` (user, all, off) in the host's environment overrides every capture setting.
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
import { canonical } from './project.js'
export { latestUserText, MAX_QUERY_CHARS, scopeFor, SCOPE_RE, userText } from './scope.js'
import { CAPTURE_MODES, captureFromEnv, LIVE_DEFAULTS, LiveSettings, settingsMount } from './settings.js'
export { findProject, resolveProject } from './project.js'
import { SKILL } from './skill.js'
import { SCOPE_RE, scopeFor, typedText, userText } from './scope.js'
import { answerOf, Capturer, DRAIN_MS, markOff } from './capture.js'
import { commandOf, noteBlock, Starter } from './start.js'
import { registerTools } from './tools.js'

/** Cordis plugin name. */
export const name = 'plur'
/** The dsh web route the settings card reads the service's state from. */
export const STATUS_PATH = '/plur/status'

/**
 * Answer `GET /plur/status` (dsh web): `{enabled, state, url, version, engrams, reason}`. `state` is
 * `running`, `starting`, `failed` (the plugin could not start it: `reason`) or `not running`. `url` is the
 * service's address without any token: dsh web's server has no login, so nothing secret is served here.
 */
async function statusHandler (req, res, client, starter, live, override) {
  const send = (code, body) => {
    res.writeHead(code, { 'content-type': 'application/json', 'cache-control': 'no-store' })
    res.end(JSON.stringify(body))
  }
  if (req.method !== 'GET') { send(405, { error: 'GET only' }); return }
  const { enabled, capture } = live.get()
  const said = { enabled, capture: override ?? capture, captureFromEnv: override !== undefined }
  try {
    const status = await client.request('GET', '/status', undefined, { timeoutMs: 3000 })
    const where = await client.found
    send(200, { ...said, state: 'running', url: where?.url ?? null, version: status.version ?? null, engrams: status.engrams ?? null, reason: '' })
  } catch (error) {
    const state = starter.state === 'starting' || starter.state === 'failed' ? starter.state : 'not running'
    send(200, { ...said, state, url: null, version: null, engrams: null, reason: starter.state === 'failed' ? starter.reason : String(error?.message ?? error) })
  }
}

/** The only service the plugin needs; tools, commands and skills are optional (see `apply`). */
export const inject = ['systemPrompt']
/**
 * The section's name and order (tool guidance uses 100-199 in DSH's order bands). A second mount of the plugin
 * in one host (a personal-only row beside a project one) registers `plur:memory:2` (then `:3`...): DSH refuses
 * a section name twice.
 */
export const SECTION_NAME = 'plur:memory'
/** Most mounts of the plugin one host can hold (section names `plur:memory` .. `plur:memory:9`). */
export const MAX_MOUNTS = 9
/** Per host (Cordis root): the plur home each capturing mount captures for (one mount per home captures). */
const capturers = new WeakMap()
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
/**
 * Event emitted once a typed message's recall is done and its capture is handed to the service, or not:
 * `({agent, captured, skipped, sent}) => void`; `skipped` says why not (`capture off`, `PLUR_CAPTURE=off`,
 * `another plur mount captures`; '' when captured), `sent` settles when the service answered.
 */
export const CAPTURE_EVENT = 'plur/capture'

const DEFAULTS = Object.freeze({
  home: undefined, scope: 'cwd', timeoutMs: 5000, toolTimeoutMs: 15000, waitMs: 1500, turnWaitMs: 1000,
  enabled: true, capture: 'user', plurCommand: undefined, autoStart: true,
})

/** Whether `value` is a scope setting: 'cwd' or 'project' (the session folder's project), or one fixed plur scope. */
export function validScope (value) {
  return value === 'cwd' || value === 'project' || (typeof value === 'string' && SCOPE_RE.test(value))
}

/**
 * Validate the plugin config; unknown keys and bad values fail at load, naming the value and the fix.
 * @param {Record<string, unknown> | undefined} config - `{home?, scope?, timeoutMs?, toolTimeoutMs?,
 *   waitMs?, turnWaitMs?}`: `home` the plur home (default `$PLUR_HOME`, else `~/.plur`); `scope`
 *   `'cwd'` (default: each agent gets the project of its session's workspace, as plur resolves it:
 *   git root, bound folders, the home's registry; `global` only without a workspace) or one fixed plur scope (`global`, `project:<name>`, `agent:<name>`); `timeoutMs` the block
 *   refresh timeout (ms, default 5000); `toolTimeoutMs` the tool/command request timeout (ms,
 *   default 15000); `waitMs` the longest wait for the block at an agent's first assembly (ms,
 *   default 1500, 0 = never wait); `turnWaitMs` the same at the first assembly of each later turn
 *   (ms, default 1000, 0 = show a turn's block from the next turn on); `enabled` memory on (default
 *   true; false: no block, no tools, nothing deleted); `capture` what the conversation leaves in
 *   memory (`'user'` default, `'all'`, `'off'`); `plurCommand` the plur program (name on PATH or
 *   path, or an argv list; default `plur`) the plugin runs to start the service when none answers;
 *   `autoStart` whether it does (default true). `enabled`, `capture` and `scope` are also DSH
 *   settings (namespace `plur`) when the host composes the settings seam.
 * @returns {{home: string, scope: string, timeoutMs: number, toolTimeoutMs: number, waitMs: number, turnWaitMs: number}} the settings.
 * @throws {Error} on an unknown key or a bad value.
 */
export function resolveConfig (config = {}) {
  if (config === null || typeof config !== 'object') throw new TypeError(`@plur-ai/dsh config must be an object, got ${JSON.stringify(config)}`)
  const unknown = Object.keys(config).filter((key) => !(key in DEFAULTS))
  if (unknown.length > 0) throw new Error(`@plur-ai/dsh config has unknown key(s) ${unknown.join(', ')}; the keys are ${Object.keys(DEFAULTS).join(', ')}`)
  const settings = { ...DEFAULTS, ...Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined)) }
  if (typeof settings.scope === 'string') settings.scope = settings.scope.normalize('NFC')
  if (settings.home !== undefined && typeof settings.home !== 'string') throw new TypeError(`@plur-ai/dsh config.home must be a path string, got ${JSON.stringify(settings.home)}`)
  if (!validScope(settings.scope)) {
    throw new Error(`@plur-ai/dsh config.scope ${JSON.stringify(settings.scope)} is invalid: use 'cwd' (or 'project'), 'global', 'project:<name>' or 'agent:<name>'`)
  }
  for (const key of ['enabled', 'autoStart']) {
    if (typeof settings[key] !== 'boolean') throw new TypeError(`@plur-ai/dsh config.${key} must be true or false, got ${JSON.stringify(settings[key])}`)
  }
  if (!CAPTURE_MODES.includes(settings.capture)) throw new Error(`@plur-ai/dsh config.capture ${JSON.stringify(settings.capture)} is invalid: use ${CAPTURE_MODES.map((m) => `'${m}'`).join(', ')}`)
  const command = settings.plurCommand
  if (command !== undefined && !(typeof command === 'string' && command.trim() !== '') && !(Array.isArray(command) && command.length > 0 && command.every((a) => typeof a === 'string') && command[0].trim() !== '')) {
    throw new TypeError(`@plur-ai/dsh config.plurCommand must be the plur program (a path or a name on PATH) or an argv list such as ['python3', '-m', 'plur'], got ${JSON.stringify(command)}`)
  }
  for (const key of ['timeoutMs', 'toolTimeoutMs']) {
    const value = settings[key]
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new Error(`@plur-ai/dsh config.${key} must be a positive number of milliseconds, got ${JSON.stringify(value)}`)
  }
  for (const key of ['waitMs', 'turnWaitMs']) {
    const value = settings[key]
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new Error(`@plur-ai/dsh config.${key} must be a number of milliseconds >= 0, got ${JSON.stringify(value)}`)
  }
  return { ...settings, scope: settings.scope === 'project' ? 'cwd' : settings.scope, home: resolveHome(settings.home) }
}

/**
 * Plugin body (`ctx.plugin(plur, config)`).
 * @param {import('@deepseek-ai/cordis').Context} ctx - the plugin context (with `systemPrompt`).
 * @param {Record<string, unknown>} [config] - see {@link resolveConfig}.
 */
export function apply (ctx, config) {
  const settings = resolveConfig(config)
  const logger = ctx.logger('plur')
  // PLUR_CAPTURE in DSH's environment (user, all, off) overrides every other capture setting for this process
  const captureOverride = captureFromEnv(process.env)
  const client = new PlurClient({ home: settings.home, timeoutMs: settings.timeoutMs })
  const tools = new PlurClient({ home: settings.home, timeoutMs: settings.toolTimeoutMs })
  const cache = new BlockCache()
  const starter = new Starter({ home: settings.home, command: commandOf(settings.plurCommand) })
  const capturer = new Capturer({ client: new PlurClient({ home: settings.home, timeoutMs: settings.toolTimeoutMs }), logger, starter })
  let live = true
  let lastProblem = ''
  /** Tool registrations to undo when memory is switched off; a re-mount when it is switched on. */
  let toolsMounted
  const live_ = new LiveSettings({ enabled: settings.enabled, capture: settings.capture, scope: settings.scope }, (next, prev) => {
    if (!live) return
    logger.info('plur settings: memory %s, capture %s, scope %s', next.enabled ? 'on' : 'off', next.capture, next.scope)
    if (next.enabled !== prev.enabled) {
      if (!next.enabled) cache.clearAll()
      toolsMounted?.(next.enabled)
    }
  })
  /** The settings in force now (the settings seam's, else the config's; PLUR_CAPTURE over both). */
  const now = () => ({ ...settings, ...live_.get(), ...(captureOverride === undefined ? {} : { capture: captureOverride }) })
  // One mount per home captures (a second mount in the same host, personal-only beside a project one, would
  // store every typed message twice); the first one does.
  const homes = capturers.get(ctx.root) ?? new Set()
  capturers.set(ctx.root, homes)
  const capturesHere = !homes.has(settings.home)
  if (capturesHere) {
    homes.add(settings.home)
    ctx.effect(() => () => { homes.delete(settings.home) }, 'plur: this mount captures for its home')
  } else {
    logger.info('plur capture: another plur mount in this host captures for %s; this one does not', settings.home)
  }

  // Disposal (a headless run's exit included) waits for captures in flight, bounded: the first message of a
  // run that started the service is handed over once the service is up (capture.js); past the bound they go
  // on, their retry timer keeping the process up, and a turn finally lost is logged.
  ctx.effect(() => async () => {
    live = false
    cache.clearAll()
    const left = await capturer.drain(DRAIN_MS)
    if (left > 0) logger.info('plur: %d captured message(s) still waiting for the plur service; the process ends once they are stored', left)
  }, 'plur: drop every memory block, wait for captures in flight')

  const sectionName = registerSection(ctx, {
    order: SECTION_ORDER,
    text: (assembly) => {
      const id = assembly.agent?.id
      return id === undefined || !live_.get().enabled ? '' : cache.read(id)
    },
  })
  if (sectionName !== SECTION_NAME) logger.info('plur: another plur mount holds the %s section; this one is %s', SECTION_NAME, sectionName)

  /** Memory is off or starting: one line for the block when there is none yet, and an error log. */
  const unavailable = async (error) => {
    if (!['NO_SERVICE', 'UNREACHABLE'].includes(error?.code)) return undefined
    if (!settings.autoStart) return `plur memory is off: ${error.message}; or set the plugin's autoStart to true`
    if (starter.state === 'idle') {
      logger.info('no plur service answers (%s); starting one: %s', error.message, starter.commandLine)
      starter.start().then(() => {
        if (!live) return
        if (starter.state === 'failed') logger.error(`plur memory is off: the plur service could not be started (${starter.reason}); set the plugin's plurCommand to the plur program, or run \`plur service start\``)
        else logger.info('plur service started; memory from the next turn')
      })
    }
    // A command that cannot run fails at once; give it a moment so the first block can say why.
    await Promise.race([starter.done, new Promise((resolve) => setTimeout(resolve, 200).unref?.())])
    if (starter.state === 'failed') return `plur memory is off: the plur service is not running and could not be started with ${starter.commandLine} (${starter.reason}); set the plugin's plurCommand to the plur program, or run \`plur service start\``
    return `plur memory is starting: the plur service was not running, so this session started it (${starter.commandLine}); memory shows from the next turn`
  }

  // A workspace's project root is registered in the home by plur itself (under its lock), once per
  // folder and plugin; until then scopeFor computes the scope registering gives.
  const registered = new Set()
  const registerProject = (agent) => {
    const cwd = agent.session?.header?.cwd
    if (!['cwd', 'project'].includes(now().scope) || typeof cwd !== 'string' || cwd === '' || registered.has(cwd)) return
    registered.add(cwd)
    client.request('POST', '/project', { folder: canonical(cwd) }).catch(() => { registered.delete(cwd) })
  }

  const refresh = (agent, query) => {
    const t0 = performance.now()
    const ticket = cache.begin(agent.id)
    const scope = scopeFor(agent, now().scope, settings.home)
    registerProject(agent)
    return client.request('POST', '/block', { agent_id: agent.id, query, scope, inject: true }, { signal: ticket.controller.signal })
      .then((reply) => {
        if (typeof reply?.text !== 'string' || typeof reply?.hash !== 'string') throw new Error(`plur /block answered without text/hash: ${JSON.stringify(reply).slice(0, 200)}`)
        return { reply, error: undefined }
      })
      .catch(async (error) => {
        const note = await unavailable(error).catch(() => undefined)
        // the note replaces nothing: a block the agent already has stays (a service that died mid-session)
        return { reply: note !== undefined && cache.latest(agent.id).text === '' ? noteBlock(note) : undefined, error, note }
      })
      .then(({ reply, error, note }) => {
        const outcome = cache.settle(ticket, reply)
        const problem = error === undefined ? '' : String(note ?? error.message ?? error)
        if (problem !== lastProblem && live && outcome !== 'stale') {
          if (problem === '') logger.info('memory blocks refresh again')
          else if (note === undefined) logger.warn('memory block not refreshed, keeping the previous one: %s', problem)
          else if (!settings.autoStart) logger.error(note) // a failed start is logged once by the starter
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
      const current = now()
      // typed while memory or capture is off: never sent, marked so that `plur ingest` of this session skips it too
      if ((!current.enabled || current.capture === 'off') && agent?.id !== undefined && typedText(message) !== '') {
        markOff(settings.home, agent, message?.id)
      }
      if (!current.enabled) return
      const query = userText(message)
      if (query === '' || agent?.id === undefined) return
      const recalled = refresh(agent, query)
      // capture: the typed text whole, off the turn path (fire and forget), once this turn's recall is done:
      // stored earlier, the message would be recalled for itself and crowd the notes that answer it out
      const skipped = current.capture === 'off' ? (captureOverride === 'off' ? 'PLUR_CAPTURE=off' : 'capture off') : capturesHere ? '' : 'another plur mount captures'
      const text = typedText(message)
      const scope = scopeFor(agent, current.scope, settings.home)
      recalled.finally(() => {
        if (!live) return
        const sent = skipped === '' ? capturer.capture({ agent, text, messageId: message?.id, scope }) : undefined
        ctx.emit(CAPTURE_EVENT, { agent, captured: sent !== undefined, skipped, sent })
      })
    } catch (error) {
      logger.warn('plur refresh not started: %o', error)
    }
  })

  // The first assembly after a user message waits (bounded) for its block, then shows it for the
  // whole turn. Other assemblies read the shown block unchanged.
  ctx.on('system-prompt/assemble', async (_assembly, context, next) => {
    const agent = context?.agent
    const id = agent?.id
    if (id === undefined || !live_.get().enabled || !cache.isFresh(id)) return next()
    const first = cache.shows(id) === 0
    const t0 = performance.now()
    const settled = await cache.settled(id, first ? settings.waitMs : settings.turnWaitMs, context.signal)
    const waitedMs = performance.now() - t0
    const changed = cache.show(id)
    if (live) ctx.emit(SHOW_EVENT, { agent, first, waitedMs, settled, changed, hash: cache.hash(id) })
    if (first) logger.debug('first memory block for %s: waited %s ms, %s', id, waitedMs.toFixed(1), settled ? 'landed' : 'not yet (shown from the next turn)')
    const assembled = await next()
    const text = cache.read(id)
    if (!assembled.sections.some((section) => section.name === sectionName && section.text !== text)) return assembled
    return { ...assembled, sections: assembled.sections.map((section) => section.name === sectionName ? { ...section, text } : section) }
  })

  // capture = all: the model's answer too, when its turn ends (off the turn path: the listener returns at once)
  ctx.on('agent/turn-stopping', ({ agent } = {}) => {
    try {
      const current = now()
      if (!current.enabled || current.capture !== 'all' || !capturesHere || agent?.id === undefined) return
      const answer = answerOf(agent)
      if (answer !== undefined) capturer.capture({ agent, text: answer.text, role: 'assistant', turn: answer.turn, scope: scopeFor(agent, current.scope, settings.home) })
    } catch (error) {
      logger.warn('plur capture of the answer not started: %o', error)
    }
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
        const why = String(error?.message ?? error)
        // a later mount of the plugin (its section is plur:memory:2...): the first one's tools, command,
        // settings and route serve this host
        if (sectionName !== SECTION_NAME && /already registered/.test(why)) logger.info(`plur ${what}: another plur mount in this host has them (${why})`)
        else logger.error(`plur ${what} not mounted: ${why}`)
      })
  }
  const state = { settings, now, live: live_, starter, cache, captureOverride }
  ctx.inject(['tools'], mount('tools', async (scoped) => {
    let unregister
    const turn = async (on) => {
      if (!on) { unregister?.(); unregister = undefined; return 'off' }
      if (unregister !== undefined) return 'on'
      const done = await registerTools(scoped, tools, { get scope () { return now().scope }, home: settings.home })
      unregister = done.unregister
      return done.from
    }
    toolsMounted = (on) => { turn(on).catch((error) => logger.error(`plur tools not ${on ? 'mounted' : 'removed'}: ${String(error?.message ?? error)}`)) }
    scoped.effect(() => () => { toolsMounted = undefined }, 'plur: tools follow the enabled setting')
    return turn(live_.get().enabled)
  }))
  ctx.inject(['commands'], mount('the /plur command', (scoped) => registerCommand(scoped, tools, state)))
  ctx.inject(['skills'], mount('the plur-memory skill', (scoped) => { scoped.skills.register(SKILL) }))
  ctx.inject(['settings'], mount('settings', settingsMount(ctx, live_, validScope)))
  // dsh web: GET /plur/status for the settings card (the service's state and address; never a token)
  ctx.inject(['webServer'], mount('the /plur/status route', (scoped) => {
    scoped.effect(() => scoped.webServer.register({ kind: 'exact', path: STATUS_PATH, handler: (req, res) => { statusHandler(req, res, tools, starter, live_, captureOverride) } }), 'plur: /plur/status')
  }))
}

/**
 * Register the memory section under the first free name: `plur:memory`, else `plur:memory:2` .. `:9` (a second
 * mount of the plugin in one host).
 * @returns {string} the name it got.
 * @throws {Error} DSH's own error for anything but a taken name, or when every name is taken.
 */
function registerSection (ctx, section) {
  for (let i = 1; i <= MAX_MOUNTS; i++) {
    const name = i === 1 ? SECTION_NAME : `${SECTION_NAME}:${i}`
    try {
      ctx.systemPrompt.section({ ...section, name })
      return name
    } catch (error) {
      if (!/already registered/.test(String(error?.message)) || i === MAX_MOUNTS) throw error
    }
  }
  throw new Error('unreachable')
}

export default { name, inject, apply }
