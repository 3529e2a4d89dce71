/**
 * Capture: memory forms from the conversation. Each message the user typed (`source.kind === 'user'`;
 * never plugin reminders, DSH's runtime-context snapshots or tool results) is handed to the plur service's
 * capture endpoint, which screens secrets out and stores the turn with its session provenance.
 *
 * Off the turn path: the request is fired and never awaited by the turn (each try bounded by the plugin's tool
 * timeout). While the service this plugin started is coming up (no `service.json` yet, or its address not
 * answering) the capture waits for it, retrying, at most {@link START_WAIT_MS}: the message of the headless
 * run that started the service is stored too. The retry timer keeps the process alive, so a one-shot `dsh`
 * stays up until its turn is handed over; plugin disposal waits for captures in flight, at most
 * {@link DRAIN_MS}, within DSH's 5 s shutdown grace. The service acknowledges a turn once it is in its
 * journal (it survives a kill of the service). A turn finally not stored is logged at error level, one line
 * per kind of failure, and never delays or breaks the turn. A service without the endpoint (404 for the
 * route) turns capture off for the plugin's life, with one info line.
 *
 * A message typed while capture or memory is switched off is not sent; it is marked instead
 * ({@link markOff}: its session and number, never its text, one line in `<home>/capture-off.jsonl`, the file
 * plur's own capture writes when its setting is off), so a later `plur ingest` of the session log leaves it out.
 *
 * @module @plur-ai/dsh/capture
 */
import { closeSync, openSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'

/** The capture endpoint below `/api/v1`. */
export const CAPTURE_PATH = '/capture'
/** The file in plur's home that lists the turns typed while capture was off (plur/memory/rules.py: OFF_FILE). */
export const OFF_FILE = 'capture-off.jsonl'
/** Longest text sent, characters (a longer message keeps its head). */
export const MAX_CAPTURE_CHARS = 16000
/** Longest wait for the service this plugin started before a capture is given up, ms. */
export const START_WAIT_MS = 90000
/** Pause between two tries while that service comes up, ms. */
export const RETRY_MS = 250
/** Longest wait of plugin disposal for captures in flight, ms (DSH force-exits 5 s after an exit request). */
export const DRAIN_MS = 4000
/** Failures of a service that is not up yet (no service.json, or its address refuses). */
const NOT_UP = new Set(['NO_SERVICE', 'UNREACHABLE'])

/**
 * The session id of a DSH agent (its session header's id), or `undefined`.
 * @param {{session?: {header?: {id?: string}}, sessionId?: string}} agent - the DSH agent.
 * @returns {string | undefined} the id.
 */
export function sessionOf (agent) {
  const id = agent?.session?.header?.id ?? agent?.session?.id ?? agent?.sessionId
  return typeof id === 'string' && id !== '' ? id : undefined
}

/**
 * The 0-based position of a typed message among the messages the user typed in its session: the typed
 * `user/message` events of the session's append-only log (restored history included) before it. The
 * same message always gets the same number, so a capture repeated after a restart is the same turn.
 * @param {{session?: {events?: ReadonlyArray<{type: string, data?: any}>}}} agent - the DSH agent.
 * @param {string | undefined} messageId - the claimed message's id (not counted when already logged).
 * @returns {number} the turn number.
 */
export function typedTurn (agent, messageId) {
  let n = 0
  for (const event of agent?.session?.events ?? []) {
    if (event.type !== 'user/message' || event.data?.source?.kind !== 'user') continue
    if (messageId !== undefined && event.data?.id === messageId) return n
    n += 1
  }
  return n
}

/**
 * The model's answer to the latest typed message: the text of the last `assistant/message` after it, with
 * that message's turn number (an answer shares its question's number; the role tells them apart).
 * @param {{session?: {events?: ReadonlyArray<{type: string, data?: any}>}}} agent - the DSH agent.
 * @returns {{text: string, turn: number} | undefined} nothing when the turn ended without text.
 */
export function answerOf (agent) {
  const events = agent?.session?.events ?? []
  let text = ''
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]
    if (event.type === 'assistant/message' && text === '') {
      text = (event.data?.message?.content ?? []).filter((b) => b?.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('\n').trim()
    } else if (event.type === 'user/message' && event.data?.source?.kind === 'user') {
      return text === '' ? undefined : { text, turn: typedTurn(agent, event.data?.id) }
    }
  }
  return undefined
}

/**
 * Mark a typed message as not to be kept: appends `{"session", "turn", "role": "user", "at"}` to
 * `<home>/capture-off.jsonl` (owner-only; one write of one short line, so appends of several processes never
 * interleave). The numbers are the session log's (see {@link typedTurn}), which `plur ingest` of that log reads
 * the same way. Nothing is written when the home does not exist; a failed write returns false, never throws.
 * @param {string} home - plur's home folder.
 * @param {any} agent - the DSH agent. @param {string | undefined} messageId - the claimed message's id.
 * @returns {boolean} whether the mark was written.
 */
export function markOff (home, agent, messageId) {
  try {
    if (!statSync(home).isDirectory()) return false
    const line = JSON.stringify({ session: sessionOf(agent) ?? agent.id, turn: typedTurn(agent, messageId), role: 'user', at: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }) + '\n'
    const fd = openSync(join(home, OFF_FILE), 'a', 0o600)
    try {
      writeSync(fd, line)
    } finally {
      closeSync(fd)
    }
    return true
  } catch {
    return false
  }
}

/** Sends typed turns to the capture endpoint. */
export class Capturer {
  /**
   * @param {{client: import('./client.js').PlurClient, logger: {info: Function, warn: Function, error: Function, debug: Function},
   *   starter?: {state: string}, startWaitMs?: number}} options - the client, the logger, the plugin's service
   *   starter (captures wait for the service it starts) and that wait's bound (default {@link START_WAIT_MS}).
   */
  constructor (options) {
    this.client = options.client
    this.logger = options.logger
    this.starter = options.starter
    this.startWaitMs = options.startWaitMs ?? START_WAIT_MS
    /** false once the service said it has no capture endpoint. */
    this.available = true
    this.lastProblem = ''
    /** @type {Set<Promise<void>>} captures in flight (tests and disposal wait on them). */
    this.inflight = new Set()
  }

  /**
   * Hand one typed message to capture (returns at once).
   * @param {{agent: any, text: string, messageId?: string, scope: string, role?: string, turn?: number}} turn -
   *   the agent, the text, the DSH message id, the scope the session recalls in, and for an answer its role
   *   (`assistant`) and turn number.
   * @returns {Promise<void>} settles when the request did (never rejects).
   */
  capture ({ agent, text, messageId, scope, role = 'user', turn }) {
    if (!this.available || text === '') return Promise.resolve()
    const body = {
      text: text.slice(0, MAX_CAPTURE_CHARS),
      session: sessionOf(agent) ?? agent.id,
      turn: turn ?? typedTurn(agent, messageId),
      role,
      scope,
      agent_id: agent.id,
    }
    const done = this.send(body)
      .then(() => {
        if (this.lastProblem !== '') this.logger.info('plur capture works again')
        this.lastProblem = ''
      })
      .catch((error) => {
        if (error?.status === 404 && /no API route/i.test(error.message)) {
          this.available = false
          this.logger.info('plur capture is off: this plur service has no %s endpoint (upgrade plur)', CAPTURE_PATH)
          return
        }
        const problem = String(error?.message ?? error)
        if (problem !== this.lastProblem) this.logger.error(`plur capture failed, a typed message was not stored in memory: ${problem}`)
        this.lastProblem = problem
      })
      .finally(() => { this.inflight.delete(done) })
    this.inflight.add(done)
    return done
  }

  /**
   * POST one capture; while the service this plugin started is not up yet, try again every {@link RETRY_MS}
   * (a referenced timer: the process waits for it), at most `startWaitMs` in all.
   * @param {object} body - the capture request.
   * @returns {Promise<any>} the service's answer.
   * @throws {import('./client.js').PlurServiceError} the last failure.
   */
  async send (body) {
    const deadline = Date.now() + this.startWaitMs
    for (;;) {
      try {
        return await this.client.request('POST', CAPTURE_PATH, body)
      } catch (error) {
        const starting = ['starting', 'started'].includes(this.starter?.state)
        if (!NOT_UP.has(error?.code) || !starting || Date.now() + RETRY_MS > deadline) {
          if (starting && NOT_UP.has(error?.code)) error.message = `the plur service this session started did not answer within ${Math.round(this.startWaitMs / 1000)} s (${error.message})`
          throw error
        }
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS))
      }
    }
  }

  /**
   * Wait for the captures in flight, at most `ms` (an unreferenced timer: it never holds the process).
   * @param {number} [ms] - the bound (default: none).
   * @returns {Promise<number>} how many were still in flight when it returned.
   */
  async drain (ms) {
    const all = Promise.all([...this.inflight])
    if (ms === undefined) await all
    else await Promise.race([all, new Promise((resolve) => setTimeout(resolve, ms).unref?.())])
    return this.inflight.size
  }
}
