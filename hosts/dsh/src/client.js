/**
 * Client for the local plur service (API v1): discovery through `<home>/service.json`, the bearer
 * token, the unix socket when there is one (else the loopback URL), a timeout on every request.
 *
 * Node's own `http` module only: `fetch` cannot speak over a unix socket without an extra
 * dependency. Every failure (no service, refused connection, timeout, abort, an API error) becomes
 * one {@link PlurServiceError} naming what went wrong and how to fix it.
 *
 * @module @plur-ai/dsh/client
 */
import { createHmac, randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { request as httpRequest } from 'node:http'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'

/** The API version this client speaks (`service.json`'s `api`). */
export const API_VERSION = 1
/** Largest reply body read, bytes; a bigger reply is refused rather than buffered. */
export const MAX_REPLY_BYTES = 8 * 1024 * 1024

/** How long a login code works, seconds (plur/net/logincode.py CODE_TTL_S); it works once. */
export const LOGIN_CODE_TTL_S = 300

/**
 * A one-time login URL for plur's pages, the twin of `plur.net.logincode.login_url`: the per-start page prefix
 * `/w/<base64url(HMAC-SHA256(secret, "plur-page-prefix"))[:16 bytes]>` and a code
 * `<expiry>.<nonce>.<hex HMAC-SHA256(secret, "plur-login-code:" + expiry.nonce)>`.
 * @param {string} baseUrl - the service's URL (`http://127.0.0.1:7777`).
 * @param {string} secret - `service.json`'s `login`.
 * @param {number} [nowS] - the time, Unix seconds (default now).
 * @returns {string} the URL.
 */
export function loginUrl (baseUrl, secret, nowS = Date.now() / 1000) {
  const prefix = '/w/' + createHmac('sha256', secret).update('plur-page-prefix').digest().subarray(0, 16).toString('base64url')
  const body = `${Math.floor(nowS) + LOGIN_CODE_TTL_S}.${randomBytes(16).toString('base64url')}`
  const code = `${body}.${createHmac('sha256', secret).update('plur-login-code:' + body).digest('hex')}`
  return `${baseUrl.replace(/\/+$/, '')}${prefix}/?${new URLSearchParams({ login: code })}`
}

/** A request to the plur service failed; `code` says how (see the constants below). */
export class PlurServiceError extends Error {
  /**
   * @param {string} message - one line: what failed, with the value, and how to fix it.
   * @param {{code: string, status?: number, type?: string, cause?: unknown}} info - `code` is one of
   *   `NO_SERVICE` (no usable service.json), `UNREACHABLE` (connection refused / socket gone),
   *   `TIMEOUT`, `ABORTED`, `HTTP` (the API answered an error; `status` and plur's error `type`).
   */
  constructor (message, info) {
    super(message, info.cause === undefined ? undefined : { cause: info.cause })
    this.name = 'PlurServiceError'
    this.code = info.code
    this.status = info.status
    this.type = info.type
  }
}

/**
 * The plur home a plugin config points at: `config.home`, else `$PLUR_HOME`, else `~/.plur`
 * (the same order as plur's own CLI).
 * @param {string | undefined} home - the plugin config's `home`, when set.
 * @returns {string} the home directory path.
 */
export function resolveHome (home) {
  if (home !== undefined && home !== '') return home
  const env = process.env.PLUR_HOME
  return env !== undefined && env !== '' ? env : join(homedir(), '.plur')
}

/**
 * Read and check `<home>/service.json`.
 * @param {string} home - the plur home.
 * @returns {Promise<{url: string, socket: string | null, token: string, version: string, settings: unknown, login: string | null}>}
 *   where the service listens, its token, and the pages' login token.
 * @throws {PlurServiceError} `NO_SERVICE` when the file is missing, unreadable, or not API v1.
 */
export async function discover (home) {
  const file = join(home, 'service.json')
  let info
  try {
    info = JSON.parse(await readFile(file, 'utf8'))
  } catch (cause) {
    throw new PlurServiceError(`no plur service for home ${home} (${file}: ${cause.code ?? cause.message}); start one with \`plur serve\` or \`plur service start\``, { code: 'NO_SERVICE', cause })
  }
  if (info === null || typeof info !== 'object' || info.api !== API_VERSION || typeof info.token !== 'string' || typeof info.url !== 'string') {
    throw new PlurServiceError(`${file} is not a plur API v${API_VERSION} service file (api=${JSON.stringify(info?.api)}); upgrade plur or restart \`plur serve\``, { code: 'NO_SERVICE' })
  }
  return { url: info.url, socket: typeof info.socket === 'string' ? info.socket : null, token: info.token, version: String(info.version ?? ''), settings: info.settings ?? null, login: typeof info.login === 'string' ? info.login : null }
}

/**
 * Whether `<home>/config.toml` changed since the service started, as plur's own doors check it
 * (`plur/service/stamp.py`: the service records the file's size and CRC-32 in `service.json`).
 * @param {string} home - the plur home.
 * @param {unknown} stamp - `service.json`'s `settings` (absent from an older plur: no check).
 * @returns {Promise<string>} '' when the service answers with the current settings, else one line
 *   naming the file and the fix.
 */
export async function settingsDrift (home, stamp) {
  if (stamp === null || typeof stamp !== 'object' || !('config' in stamp)) return ''
  const file = join(home, 'config.toml')
  let mark = null
  try {
    const data = await readFile(file)
    mark = [data.length, crc32(data)]
  } catch {
    mark = null
  }
  if (JSON.stringify(mark) === JSON.stringify(stamp.config ?? null)) return ''
  return `${file} changed since the plur service started, so it still answers with the old settings; apply them: plur service stop && plur service start`
}

/**
 * A small client bound to one plur home. It re-reads `service.json` after any connection failure
 * or 401, so a restarted service (new port, new token) is found again without a host restart.
 */
export class PlurClient {
  /**
   * @param {{home: string, timeoutMs: number}} options - the plur home, and the default timeout of
   *   one request in milliseconds (> 0).
   */
  constructor (options) {
    this.home = options.home
    this.timeoutMs = options.timeoutMs
    /** @type {Promise<Awaited<ReturnType<typeof discover>>> | undefined} */
    this.found = undefined
  }

  /**
   * {@link settingsDrift} for the service this client talks to ('' when none is found).
   * @returns {Promise<string>} '' or one line naming the changed `config.toml` and the fix.
   */
  async settingsNote () {
    try {
      this.found ??= discover(this.home)
      return await settingsDrift(this.home, (await this.found).settings)
    } catch {
      this.found = undefined
      return ''
    }
  }

  /**
   * A fresh one-time URL that logs the owner's browser in to plur's pages, as `plur service url` makes it
   * (`plur/net/logincode.py`): `<url>/w/<prefix>/?login=<expiry>.<nonce>.<HMAC>`, valid once for
   * {@link LOGIN_CODE_TTL_S} seconds, signed with the login secret in `service.json` (owner-only).
   * @returns {Promise<string>} the URL.
   * @throws {PlurServiceError} `NO_SERVICE` when no service runs or it has no pages.
   */
  async loginUrl () {
    this.found = undefined
    this.found = discover(this.home)
    const where = await this.found
    if (where.login === null) throw new PlurServiceError(`the plur service for ${this.home} serves no pages (no login secret in service.json); restart it with \`plur service start\``, { code: 'NO_SERVICE' })
    return loginUrl(where.url, where.login)
  }

  /**
   * Send one JSON request to `/api/v1<path>`.
   * @param {'GET' | 'POST' | 'DELETE'} method - HTTP method.
   * @param {string} path - path below `/api/v1`, e.g. `/block`.
   * @param {unknown} [body] - JSON body (POST only).
   * @param {{signal?: AbortSignal, timeoutMs?: number}} [options] - a caller signal (the host's
   *   turn or tool signal) and a per-request timeout in ms overriding the default.
   * @returns {Promise<any>} the parsed JSON reply.
   * @throws {PlurServiceError} on any failure; never anything else.
   */
  async request (method, path, body, options = {}) {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs
    const timeout = AbortSignal.timeout(timeoutMs)
    const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout])
    let where
    try {
      this.found ??= discover(this.home)
      where = await this.found
    } catch (error) {
      this.found = undefined
      throw error
    }
    try {
      return await send(where, method, path, body, signal)
    } catch (error) {
      const failure = asServiceError(error, { timeout, timeoutMs, signal, where, path })
      if (failure.code === 'UNREACHABLE' || failure.status === 401) this.found = undefined
      throw failure
    }
  }
}

/** One HTTP exchange over the socket (preferred) or the loopback URL. */
function send (where, method, path, body, signal) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8')
    const headers = { authorization: `Bearer ${where.token}`, accept: 'application/json' }
    if (payload !== undefined) {
      headers['content-type'] = 'application/json'
      headers['content-length'] = String(payload.length)
    }
    const target = where.socket !== null
      ? { socketPath: where.socket, host: 'localhost' }
      : (() => { const u = new URL(where.url); return { host: u.hostname, port: u.port } })()
    const req = httpRequest({ ...target, method, path: '/api/v1' + path, headers, signal }, (res) => {
      const chunks = []
      let size = 0
      res.on('data', (chunk) => {
        size += chunk.length
        if (size > MAX_REPLY_BYTES) req.destroy(new Error(`reply larger than ${MAX_REPLY_BYTES} bytes`))
        else chunks.push(chunk)
      })
      res.on('error', reject)
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        let json
        try {
          json = text === '' ? {} : JSON.parse(text)
        } catch {
          reject(new PlurServiceError(`plur service answered ${res.statusCode} with non-JSON for ${method} ${path}`, { code: 'HTTP', status: res.statusCode }))
          return
        }
        if (res.statusCode >= 200 && res.statusCode < 300) resolve(json)
        else {
          const err = json?.error ?? {}
          const hint = res.statusCode === 401 ? ' (token rejected: the service restarted? it is re-read on the next request)' : ''
          reject(new PlurServiceError(`plur ${method} ${path}: ${res.statusCode} ${err.type ?? ''} ${err.message ?? text.slice(0, 200)}${hint}`.replace(/\s+/g, ' ').trim(), { code: 'HTTP', status: res.statusCode, type: err.type }))
        }
      })
    })
    req.on('error', reject)
    req.end(payload)
  })
}

/** Map a raw failure onto one PlurServiceError. */
function asServiceError (error, { timeout, timeoutMs, signal, where, path }) {
  if (error instanceof PlurServiceError) return error
  if (timeout.aborted) return new PlurServiceError(`plur service did not answer ${path} within ${timeoutMs} ms; raise the plugin's timeoutMs or check \`plur service status\``, { code: 'TIMEOUT', cause: error })
  if (signal.aborted) return new PlurServiceError(`request ${path} to the plur service was aborted`, { code: 'ABORTED', cause: error })
  const at = where.socket ?? where.url
  return new PlurServiceError(`plur service at ${at} is unreachable (${error.code ?? error.message}); start it with \`plur serve\``, { code: 'UNREACHABLE', cause: error })
}
