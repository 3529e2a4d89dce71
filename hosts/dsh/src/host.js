/**
 * Import a DeepSeek Harness package the way the running host has it.
 *
 * `dsh plugin add ./hosts/dsh` installs the plugin as a pnpm `link:`: Node resolves the plugin's
 * own imports from its real path (the checkout), where the host's packages are not installed, so
 * a plain `import('@deepseek-ai/dsh-tools')` fails there. The host's copy is reachable from the
 * process's main module (the `dsh` launcher: every package of its install is in its module graph)
 * and from the module fallback the launcher keeps at `$DSH_HOME/profiles/node_modules`. Resolving
 * from the host first also means the plugin uses the very module instance the host's registries
 * were built from (one `ToolArgsError` class, one `defineTool`), whichever way it was installed.
 *
 * @module @plur-ai/dsh/host
 */
import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

/**
 * Files a host package is resolved from, first match wins: the process's main module (realpath),
 * then the launcher's profile module fallback.
 * @param {NodeJS.ProcessEnv} [env] - the environment (`DSH_HOME`).
 * @param {string[]} [argv] - the process argv (`argv[1]` is the main module).
 * @returns {string[]} absolute file paths (a resolution anchor need not exist as a file).
 */
export function hostAnchors (env = process.env, argv = process.argv) {
  const anchors = []
  if (typeof argv[1] === 'string' && argv[1] !== '') {
    try { anchors.push(realpathSync(argv[1])) } catch { anchors.push(resolve(argv[1])) }
  }
  const home = env.DSH_HOME !== undefined && env.DSH_HOME.trim() !== '' ? resolve(env.DSH_HOME) : join(homedir(), '.dsh')
  anchors.push(join(home, 'profiles', 'plur-anchor.js'))
  return anchors
}

/**
 * Import `specifier` from the host's module graph, else from the plugin's own.
 * @param {string} specifier - a bare package specifier, e.g. `'@deepseek-ai/dsh-tools'`.
 * @param {{anchors?: string[], own?: () => Promise<any>}} [options] - resolution anchors
 *   (default {@link hostAnchors}) and the plugin's own import (a function so that it resolves
 *   relative to the calling module; default: none).
 * @returns {Promise<{module: any, from: string}>} the module namespace and where it came from
 *   (the resolved file, or `'plugin'`).
 * @throws {Error} naming the specifier and every place tried, when none resolves it.
 */
export async function importFromHost (specifier, options = {}) {
  const anchors = options.anchors ?? hostAnchors()
  const tried = []
  for (const anchor of anchors) {
    let file
    try {
      file = createRequire(anchor).resolve(specifier)
    } catch (error) {
      tried.push(`${anchor} (${error.code ?? error.message})`)
      continue
    }
    return { module: await import(pathToFileURL(file).href), from: file }
  }
  if (options.own !== undefined) {
    try {
      return { module: await options.own(), from: 'plugin' }
    } catch (error) {
      tried.push(`the plugin's own folder (${error.code ?? error.message})`)
    }
  }
  throw new Error(`cannot import ${specifier}: not found from ${tried.join('; ')}; run the plugin inside a DeepSeek Harness host (\`dsh plugin --profile <name> add ...\`; tested with 0.1.0-rc.8)`)
}
