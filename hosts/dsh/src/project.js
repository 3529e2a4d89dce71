/**
 * The project of a folder: the twin of plur's Python resolver (`plur/project/`), kept equal by one
 * table of cases (`tests/data/project_identity.json`) that `test/project.test.js` and
 * `tests/test_project.py` both run.
 *
 * Walking up from the folder, the first of: a folder bound to a project (`plur project bind`), a
 * git repository's root (a worktree's `.git` file leads to its main repository, only when that
 * repository lists the worktree: git's backlink check; a submodule is its own), else the folder itself. A root's scope is what `<home>/projects.json` registered for it,
 * or, for a root not registered yet, the one registering would give: its last name's letters and
 * digits of any script (NFC) plus `_ . @ -`, other runs as one `-`, and `-2`, `-3`... when another
 * root already holds that name. Never `global`.
 *
 * This module only reads. New roots are registered by plur itself (the plugin asks the service,
 * `POST /api/v1/project`), under the store's lock.
 *
 * @module @plur-ai/dsh/project
 */
import { createHash } from 'node:crypto'
import { lstatSync, readFileSync, realpathSync, statSync } from 'node:fs'
import { basename, dirname, isAbsolute, join, normalize, resolve } from 'node:path'

/** Longest scope name after `project:`, characters. */
export const NAME_MAX_CHARS = 128
/** Largest `<home>/projects.json` read, bytes (as plur's `plur/project/registry.py`). */
export const REGISTRY_MAX_BYTES = 16 * 1024 * 1024

/**
 * The absolute, symlink-free form of `folder` (as Python's `os.path.realpath`: a missing tail stays as spelled).
 * @param {string} folder
 * @returns {string}
 */
export function canonical (folder) {
  const abs = resolve(folder)
  try {
    return realpathSync.native(abs)
  } catch {
    const parent = dirname(abs)
    return parent === abs ? abs : join(canonical(parent), basename(abs))
  }
}

const exists = (p) => { try { lstatSync(p); return true } catch { return false } }
const isDir = (p) => { try { return statSync(p).isDirectory() } catch { return false } }
const readPointer = (p) => {
  try {
    return readFileSync(p).subarray(0, 4096).toString('utf8').trim()
  } catch {
    return null
  }
}

const pointed = (base, text) => normalize(isAbsolute(text) ? text : join(base, text)).replace(/[\\/]+$/, '')
const same = (a, b) => canonical(a) === canonical(b)

/**
 * The root of the repository whose `.git` file sits in `folder` (a worktree: the main one). A `.git`
 * file is followed only to a worktree its repository lists, as git checks one (`validate_worktree`):
 * the git dir it names sits in the common dir's `worktrees/`, and that admin dir's `gitdir` file
 * points back to this `.git` file. Anything else (a planted `.git` file) leaves `folder` its own project.
 * @param {string} folder
 */
function mainRoot (folder) {
  const text = readPointer(join(folder, '.git'))
  if (!text || !text.startsWith('gitdir:')) return folder
  const gitdir = pointed(folder, text.slice('gitdir:'.length).trim())
  let common = readPointer(join(gitdir, 'commondir'))
  if (!common) return folder // a submodule (or a plain gitdir link): its own repository
  common = pointed(gitdir, common)
  if (basename(common) !== '.git') return folder // a worktree of a bare repository or a submodule
  const back = readPointer(join(gitdir, 'gitdir'))
  if (!back || !same(pointed(gitdir, back), join(folder, '.git'))) return folder // not listed by the repository
  if (!same(dirname(canonical(gitdir)), join(common, 'worktrees'))) return folder // not an admin dir of that repository
  return canonical(dirname(common))
}

/**
 * The git repository root of a canonical folder, `null` outside any.
 * @param {string} folder
 * @returns {string | null}
 */
export function gitRoot (folder) {
  let here = folder
  for (;;) {
    if (exists(join(here, '.git'))) return isDir(join(here, '.git')) ? here : mainRoot(here)
    const parent = dirname(here)
    if (parent === here) return null
    here = parent
  }
}

const KEPT = /^[\p{L}\p{N}_.@-]$/u
const ALNUM = /[\p{L}\p{N}]/u

/**
 * The scope name a root gives before the registry tells clones apart.
 * @param {string} root - a canonical folder.
 * @returns {string} 1..128 characters.
 */
export function plainName (root) {
  const base = (/[^\\/]/.test(root) ? basename(root.replace(/[\\/]+$/, '')) : '').normalize('NFC')
  const out = []
  for (const ch of base) {
    if (KEPT.test(ch)) out.push(ch)
    else if (out.length > 0 && out[out.length - 1] !== '-') out.push('-')
  }
  let name = out.join('').replace(/^-+|-+$/g, '')
  name = Array.from(name).slice(0, NAME_MAX_CHARS).join('').replace(/-+$/, '')
  if (name === '' || !ALNUM.test(name)) {
    name = 'folder-' + createHash('sha256').update(root.normalize('NFC'), 'utf8').digest('hex').slice(0, 8)
  }
  return name
}

/**
 * `name` told apart as the `n`-th root of that name, within 128 characters.
 * @param {string} name
 * @param {number} n
 */
export function withSuffix (name, n) {
  const tail = `-${n}`
  return Array.from(name).slice(0, NAME_MAX_CHARS - tail.length).join('') + tail
}

/**
 * `<home>/projects.json`, or an empty registry when it is missing or unreadable.
 * @param {string} home
 * @returns {{roots: Record<string, string>, bound: Record<string, string>, error?: string}}
 */
export function loadRegistry (home) {
  const where = join(home, 'projects.json')
  let raw
  try {
    const size = statSync(where).size
    if (size > REGISTRY_MAX_BYTES) {
      return { roots: {}, bound: {}, error: `${where} is ${size} bytes, too large: a project registry is at most ${REGISTRY_MAX_BYTES} bytes; move it aside` }
    }
    raw = readFileSync(where, 'utf8')
  } catch {
    return { roots: {}, bound: {} }
  }
  try {
    const data = JSON.parse(raw)
    const map = (v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).filter(([, s]) => typeof s === 'string' && s.startsWith('project:'))) : {})
    return { roots: map(data?.roots), bound: map(data?.bound) }
  } catch (error) {
    return { roots: {}, bound: {}, error: `${where} is not valid JSON (${error.message})` }
  }
}

/**
 * The scope a root not in the registry would get if registered now.
 * @param {{roots: Record<string, string>}} registry
 * @param {string} root
 */
export function scopeForNew (registry, root) {
  const taken = new Set(Object.values(registry.roots))
  const base = plainName(root)
  let scope = `project:${base}`
  for (let n = 2; taken.has(scope); n++) scope = `project:${withSuffix(base, n)}`
  return scope
}

/**
 * The project of `folder` given a registry (reads the file system, writes nothing).
 * @param {string} folder
 * @param {{roots: Record<string, string>, bound: Record<string, string>}} registry
 * @returns {{folder: string, root: string, scope: string, how: 'bound' | 'git' | 'folder', registered: boolean}}
 */
export function findProject (folder, registry) {
  const start = canonical(folder)
  let here = start
  let root = start
  let how = 'folder'
  const bound = (p) => Object.hasOwn(registry.bound, p)
  for (;;) {
    if (bound(here)) return { folder: start, root: here, scope: registry.bound[here], how: 'bound', registered: true }
    if (exists(join(here, '.git'))) {
      root = gitRoot(here) ?? here
      how = 'git'
      if (bound(root)) return { folder: start, root, scope: registry.bound[root], how: 'bound', registered: true }
      break
    }
    const parent = dirname(here)
    if (parent === here) break
    here = parent
  }
  if (Object.hasOwn(registry.roots, root)) return { folder: start, root, scope: registry.roots[root], how, registered: true }
  return { folder: start, root, scope: scopeForNew(registry, root), how, registered: false }
}

/**
 * The project of `folder` in the plur home `home` (reads `<home>/projects.json`).
 * @param {string} folder
 * @param {string} home
 */
export function resolveProject (folder, home) {
  return findProject(folder, loadRegistry(home))
}
