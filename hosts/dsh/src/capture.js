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
    const cwd = agent?.session?.header?.cwd
    const body = {
      agent_id: agent.id,
      session: sessionOf(agent) ?? agent.id,
      message_id: typeof messageId === 'string' ? messageId : null,
      role: 'user',
      text: text.slice(0, MAX_CAPTURE_CHARS),
      scope,
      cwd: typeof cwd === 'string' ? cwd : null,
      source: 'dsh',
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
