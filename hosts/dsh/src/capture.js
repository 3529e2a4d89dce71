/**
 * Capture: memory forms from the conversation. Each message the user typed (`source.kind === 'user'`;
 * never plugin reminders, DSH's runtime-context snapshots or tool results) is handed to the plur service's
 * capture endpoint, which screens secrets out and stores the turn with its session provenance.
 *
 * Off the turn path: the request is fired and forgotten (bounded by the plugin's tool timeout); a failure
 * is logged once per kind of failure and never delays or breaks the turn. A service without the endpoint
 * (404 for the route) turns capture off for the plugin's life, with one info line.
 *
 * @module @plur-ai/dsh/capture
 */

/** The capture endpoint below `/api/v1`. */
export const CAPTURE_PATH = '/capture'
/** Longest text sent, characters (a longer message keeps its head). */
export const MAX_CAPTURE_CHARS = 16000

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

/** Sends typed turns to the capture endpoint. */
export class Capturer {
  /**
   * @param {{client: import('./client.js').PlurClient, logger: {info: Function, warn: Function, debug: Function}}} options
   */
  constructor (options) {
    this.client = options.client
    this.logger = options.logger
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
    const done = this.client.request('POST', CAPTURE_PATH, body)
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
        if (problem !== this.lastProblem) this.logger.warn('plur capture failed, the turn was not stored: %s', problem)
        this.lastProblem = problem
      })
      .finally(() => { this.inflight.delete(done) })
    this.inflight.add(done)
    return done
  }

  /** @returns {Promise<void>} when every capture in flight settled. */
  async drain () {
    await Promise.all([...this.inflight])
  }
}
