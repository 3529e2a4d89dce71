/**
 * A real `plur serve` on a temporary home, for the tests: started with the repository's
 * `.venv/bin/python -m plur` (override with $PLUR_PYTHON), stopped (SIGTERM, then SIGKILL) at the end.
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { PlurClient } from '../../src/client.js'

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..')
export const PYTHON = process.env.PLUR_PYTHON ?? join(REPO, '.venv/bin/python')

/** Make a fresh temporary plur home (short path: unix socket addresses are limited to ~107 bytes). */
/**
 * The memory blocks stats.db recorded as injected for `agent` (plur's statistics), read by plur's Python.
 * @param {string} home - the plur home.
 * @param {string} agent - the agent id.
 * @returns {number} how many injections are recorded.
 */
export function injectionsOf (home, agent) {
  const script = 'import sqlite3, sys\nwith sqlite3.connect(sys.argv[1] + "/stats.db") as db:\n' +
    '    print(db.execute("SELECT COUNT(*) FROM injections WHERE agent = ?", (sys.argv[2],)).fetchone()[0])'
  return Number(execFileSync(PYTHON, ['-c', script, home, agent], { encoding: 'utf8' }).trim())
}

export async function tempHome () {
  return mkdtemp(join(tmpdir(), 'plur-dsh-'))
}

/**
 * Start `plur serve --port 0` on `home` and wait until its own service.json (its pid) appears.
 * @param {string} home - the plur home.
 * @param {{env?: Record<string, string>, readyMs?: number}} [options]
 * @returns {Promise<{home: string, proc: import('node:child_process').ChildProcess, info: any, api: PlurClient, log: () => string, stop: () => Promise<void>}>}
 */
export async function startPlur (home, options = {}) {
  if (!existsSync(PYTHON)) throw new Error(`no Python for plur at ${PYTHON}; run scripts/setup or set PLUR_PYTHON`)
  const env = { ...process.env, PLUR_HOME: home, HF_HUB_OFFLINE: '1', ...options.env }
  const proc = spawn(PYTHON, ['-m', 'plur', '--home', home, 'serve', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  proc.stdout.on('data', (d) => { out += d })
  proc.stderr.on('data', (d) => { out += d })
  const file = join(home, 'service.json')
  const deadline = Date.now() + (options.readyMs ?? 120000)
  let info
  while (info === undefined) {
    if (proc.exitCode !== null) throw new Error(`plur serve exited ${proc.exitCode}:\n${out}`)
    if (Date.now() > deadline) { proc.kill('SIGKILL'); throw new Error(`plur serve not ready:\n${out}`) }
    try {
      const found = JSON.parse(await readFile(file, 'utf8'))
      if (found.pid === proc.pid) info = found // not a stale file left by a killed service
      else await sleep(100)
    } catch { await sleep(100) }
  }
  const api = new PlurClient({ home, timeoutMs: 60000 })
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return
    const exited = new Promise((res) => proc.once('exit', res))
    proc.kill('SIGCONT')
    proc.kill('SIGTERM')
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10000)
    await exited
    clearTimeout(timer)
  }
  return { home, proc, info, api, log: () => out, stop }
}

/** Remove a temporary home. */
export async function removeHome (home) {
  await rm(home, { recursive: true, force: true })
}

/**
 * Load the service's embedding model now (the first dense recall loads it, seconds on a busy
 * machine), so the tests' refresh timeouts measure the steady state. Needs at least one engram.
 */
export async function warm (api, timeoutMs = 180000) {
  await api.request('POST', '/block', { agent_id: 'warm-up', query: 'warm up the model', scope: null })
  // Engrams learned just before are embedded by a background catch-up (plur.index.catchup); until it
  // ends, recalls answer from BM25 for them, so the same message could get another block later on.
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const { index } = await api.request('GET', '/status')
    if (!index || (!index.catching_up && index.pending_dense === 0)) return
    if (Date.now() > deadline) throw new Error(`plur's dense catch-up still running after ${timeoutMs} ms: ${JSON.stringify(index)}`)
    await api.request('POST', '/block', { agent_id: 'warm-up', query: 'warm up the model', scope: null })
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}
