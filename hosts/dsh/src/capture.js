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
   * @param {{agent: any, text: string, messageId?: string, scope: string}} turn - the agent, the typed
   *   text, the DSH message id, and the scope the session recalls in.
   * @returns {Promise<void>} settles when the request did (never rejects).
   */
  capture ({ agent, text, messageId, scope }) {
    if (!this.available || text === '') return Promise.resolve()
    const body = {
      text: text.slice(0, MAX_CAPTURE_CHARS),
      session: sessionOf(agent) ?? agent.id,
      turn: typedTurn(agent, messageId),
      role: 'user',
      scope,
      agent: agent.id,
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
