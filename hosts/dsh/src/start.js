/**
 * Start the local plur service when none answers, as plur's own CLI does on first need: run the
 * configured plur command (`plurCommand`, default `plur` from PATH) as `plur --home H service start
 * --port 0` in the background, once per plugin life, and tell the plugin how it went. The service
 * it starts is found through `service.json` by the next request (the next turn).
 *
 * The child is detached (its own process group) and unreferenced, so a headless `dsh` run exits
 * without waiting for it; its output goes to a file (a pipe would break when `dsh` exits first).
 *
 * @module @plur-ai/dsh/start
 */
import { spawn } from 'node:child_process'
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The plur command a config gives: `plurCommand` as a string (one program) or argv list. */
export function commandOf (setting) {
  if (setting === undefined) return ['plur']
  return typeof setting === 'string' ? [setting] : [...setting]
}

/** Last non-empty line of a text, at most 300 characters. */
function lastLine (text) {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean)
  return (lines.at(-1) ?? '').slice(0, 300)
}

/**
 * One service start per plugin life (a failed start is not retried until the plugin reloads: every
 * turn would otherwise spawn a process that fails the same way).
 */
export class Starter {
  /**
   * @param {{home: string, command: string[], env?: NodeJS.ProcessEnv}} options - the plur home,
   *   the plur command (argv prefix), and the environment for it (default `process.env`).
   */
  constructor (options) {
    this.home = options.home
    this.command = options.command
    this.env = options.env ?? process.env
    /** `idle` (never tried), `starting`, `started` (the command answered that a service runs), `failed`. */
    this.state = 'idle'
    /** Why it failed, one line ('' otherwise). */
    this.reason = ''
    /** @type {Promise<void> | undefined} resolves when the start command ends (never rejects). */
    this.done = undefined
  }

  /** The command line as a user would type it (for messages). */
  get commandLine () {
    return [...this.command, '--home', this.home, 'service', 'start', '--port', '0', '--auto'].map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ')
  }

  /**
   * Start the service unless this was tried already.
   * @returns {Promise<void>} resolves when the start command ended (started or failed).
   */
  start () {
    if (this.done !== undefined) return this.done
    this.state = 'starting'
    this.done = new Promise((resolve) => {
      let dir
      let fd
      try {
        dir = mkdtempSync(join(tmpdir(), 'plur-dsh-start-'))
        fd = openSync(join(dir, 'out.txt'), 'w')
      } catch (error) {
        this.fail(`cannot write its output to a temporary file (${error.code ?? error.message})`)
        resolve()
        return
      }
      const finish = (reason) => {
        let out = ''
        try { out = readFileSync(join(dir, 'out.txt'), 'utf8') } catch {}
        try { rmSync(dir, { recursive: true, force: true }) } catch {}
        if (reason === undefined) this.state = 'started'
        else this.fail(reason === '' ? (lastLine(out) || 'no output') : reason)
        resolve()
      }
      let child
      try {
        child = spawn(this.command[0], [...this.command.slice(1), '--home', this.home, 'service', 'start', '--port', '0', '--auto'], {
          detached: true, stdio: ['ignore', fd, fd], env: this.env, windowsHide: true,
        })
      } catch (error) {
        closeSync(fd)
        finish(`cannot run ${JSON.stringify(this.command[0])} (${error.code ?? error.message})`)
        return
      }
      closeSync(fd)
      child.once('error', (error) => {
        const why = error.code === 'ENOENT' ? 'not found' : error.code === 'EACCES' ? 'not executable' : error.message
        finish(`cannot run ${JSON.stringify(this.command[0])} (${error.code ?? 'error'}: ${why})`)
      })
      child.once('exit', (code, signal) => {
        if (code === 0) finish(undefined)
        else if (code !== null) finish('')
        else finish(`${this.command[0]} was stopped by ${signal}`)
      })
      child.unref()
    })
    return this.done
  }

  /** @param {string} reason */
  fail (reason) {
    this.state = 'failed'
    this.reason = reason
  }
}

/**
 * The one-line block the first request carries when memory is off or starting.
 * @param {string} line - what to say (one line).
 * @returns {{text: string, hash: string}} a block shaped like the service's (fenced).
 */
export function noteBlock (line) {
  const text = `<plur-memory>\n${line.replace(/[\r\n]+/g, ' ').replace(/[<>]/g, (c) => (c === '<' ? '‹' : '›'))}\n</plur-memory>`
  return { text, hash: `note:${text.length}:${line}` }
}
