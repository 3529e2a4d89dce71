/**
 * The `/plur` command (human-facing; results are shown to the user, never to the model):
 *
 * - `/plur` or `/plur status`: the service, the engram count, this agent's scope and block;
 * - `/plur recall <query>`, `/plur learn <statement>`;
 * - `/plur list [words]`: this agent's scope and global, newest first;
 * - `/plur show <id>`: one engram whole (any scope: the user owns the whole memory);
 * - `/plur forget <id> [--any-scope]`: names the engram's scope; another project's engram only with
 *   `--any-scope`;
 * - `/plur url`: the link that logs the user's browser in to plur's pages (it carries a login token);
 * - `/plur projects`: every scope with its engram count, this agent's marked;
 * - `/plur bind <folder>` / `/plur unbind <folder>`: make another folder part of this agent's project, or
 *   its own repository's project again (`plur project bind|unbind`);
 * - `/plur export [file] [--force]`: every note to a file (`plur export`; `.jsonl`, `.yaml`, or a folder for a
 *   Claude memory folder; default `plur-export-<date>.jsonl` in the session's folder; `--force` replaces a
 *   previous export); `/plur import <path> [--dry-run]`: notes from a file or folder (`plur import`), into
 *   this agent's scope where an entry names none;
 * - `/plur capture on|off`: whether the conversation forms memory (kept in DSH's settings when the
 *   host has the settings seam, else for this host process).
 *
 * Paths are resolved against the session's folder; every action goes through the service's API (the service
 * runs as the same user on this machine, so it reads and writes the user's files as the CLI would).
 *
 * @module @plur-ai/dsh/command
 */
import { isAbsolute, resolve } from 'node:path'
import { scopeFor } from './scope.js'
import { engramLine, engramText, hitLine, listVisible, statusText } from './tools.js'

const USAGE = 'usage: /plur [status] | recall <query> | learn <statement> | list [words] | show <id> | forget <id> [--any-scope] | url | projects | bind <folder> | unbind <folder> | export [file] [--force] | import <path> [--dry-run] | capture on|off'

/**
 * Register `/plur` in `ctx`'s layer (disposed with `ctx`'s fiber).
 * @param {import('@deepseek-ai/cordis').Context} ctx - a context with the `commands` service.
 * @param {import('./client.js').PlurClient} client - the plur client (tool timeout).
 * @param {{now: () => {scope: string, enabled: boolean, capture: string, toolTimeoutMs: number}, captureOverride?: string,
 *   live: import('./settings.js').LiveSettings, starter: import('./start.js').Starter,
 *   cache: import('./cache.js').BlockCache}} state - the plugin's settings, starter and block cache.
 */
export function registerCommand (ctx, client, state) {
  ctx.commands.register({
    name: 'plur',
    description: 'plur long-term memory: status, recall, learn, list, show, forget, url, projects, bind, unbind, export, import, capture',
    input: { hint: '[status|recall <query>|learn <statement>|list|show <id>|forget <id>|url|projects|bind <folder>|unbind <folder>|export [file]|import <path>|capture on|off]', images: false },
    handler: async ({ agent, rawInput, signal }) => {
      const input = (rawInput ?? '').trim()
      const [verb = 'status', ...rest] = input.split(/\s+/).filter((word) => word !== '')
      const arg = input.slice(verb.length).trim()
      const now = state.now()
      const scope = scopeFor(agent, now.scope, state.starter.home)
      const call = (method, path, body) => client.request(method, path, body, { signal })
      try {
        switch (verb) {
          case 'status': {
            const block = state.cache.read(agent.id)
            const shown = !now.enabled ? 'memory is switched off (plur.enabled)' : block === '' ? 'no memory block yet' : `memory block ${block.length} characters (hash ${state.cache.hash(agent.id)})`
            const note = await client.settingsNote()
            const env = state.captureOverride === undefined ? '' : ' (PLUR_CAPTURE in DSH\'s environment)'
            return { kind: 'success', text: `${statusText(await call('GET', '/status'), scope)} ${shown}; capture ${now.capture}${env}.${note ? ` Warning: ${note}.` : ''}` }
          }
          case 'recall': {
            if (arg === '') return { kind: 'error', text: 'usage: /plur recall <query>' }
            const reply = await call('POST', '/recall', { query: arg, k: 10, scope })
            return { kind: 'success', text: reply.hits.length === 0 ? 'No engram matches.' : reply.hits.map(hitLine).join('\n') }
          }
          case 'learn': {
            if (arg === '') return { kind: 'error', text: 'usage: /plur learn <statement>' }
            const reply = await call('POST', '/learn', { statement: arg, scope })
            return { kind: 'success', text: `${reply.created ? 'Learned' : 'Already known'} ${reply.engram.id} in ${reply.engram.scope}.` }
          }
          case 'list': {
            const rows = await listVisible(client, scope, arg === '' ? {} : { text: arg }, 30, signal)
            return { kind: 'success', text: rows.length === 0 ? `No engram in ${scope} or global${arg ? ` contains ${JSON.stringify(arg)}` : ''}.` : rows.map(engramLine).join('\n') }
          }
          case 'show': {
            if (rest.length !== 1) return { kind: 'error', text: 'usage: /plur show <id>' }
            return { kind: 'success', text: engramText((await call('GET', `/engrams/${encodeURIComponent(rest[0])}`)).engram) }
          }
          case 'forget': return await forget(rest, scope, call)
          case 'url': return { kind: 'success', text: `plur's pages (this link logs your browser in; keep it to yourself): ${await client.loginUrl()}` }
          case 'projects': {
            const byScope = Object.entries((await call('GET', '/status')).by_scope ?? {}).sort(([a], [b]) => a.localeCompare(b))
            if (byScope.length === 0) return { kind: 'success', text: 'Memory is empty.' }
            return { kind: 'success', text: byScope.map(([s, n]) => `${s}: ${n} engram${n === 1 ? '' : 's'}${s === scope ? ' (this session)' : ''}`).join('\n') }
          }
          case 'bind': return await bind(arg, agent, scope, call)
          case 'unbind': return await unbind(arg, agent, call)
          case 'export': return await exportTo(arg, agent, call)
          case 'import': return await importFrom(arg, agent, scope, call)
          case 'capture': {
            if (rest.length !== 1 || !['on', 'off'].includes(rest[0])) return { kind: 'error', text: 'usage: /plur capture on|off' }
            const where = await state.live.update({ capture: rest[0] === 'on' ? 'user' : 'off' })
            const env = state.captureOverride === undefined ? '' : ` Until it is unset, PLUR_CAPTURE=${state.captureOverride} in DSH's environment keeps capture ${state.captureOverride} in this process.`
            return { kind: 'success', text: `Capture ${rest[0]}${where === 'settings' ? ' (saved in DSH settings, namespace plur)' : ' for this host process (the host has no settings seam; set capture in the plugin config to keep it)'}.${env}` }
          }
          default:
            return { kind: 'error', text: `unknown /plur action ${JSON.stringify(verb)}; ${USAGE}` }
        }
      } catch (error) {
        return { kind: 'error', text: String(error.message ?? error) }
      }
    },
  })
}

/** `/plur forget <id> [--any-scope]`: names the scope; another project's engram needs --any-scope. */
async function forget (words, scope, call) {
  const any = words.includes('--any-scope')
  const ids = words.filter((w) => w !== '--any-scope')
  if (ids.length !== 1) return { kind: 'error', text: 'usage: /plur forget <id> [--any-scope]' }
  const engram = (await call('GET', `/engrams/${encodeURIComponent(ids[0])}`)).engram
  if (engram.scope !== scope && engram.scope !== 'global' && !any) {
    return { kind: 'error', text: `Not forgotten: ${engram.id} is in ${engram.scope}, another project than this session's ${scope}. To forget it anyway: /plur forget ${engram.id} --any-scope` }
  }
  const reply = await call('POST', '/forget', { id: engram.id })
  return { kind: 'success', text: `Forgot ${reply.forgotten} (${engram.scope}): ${engram.statement.slice(0, 120)}` }
}

/** `text` without the flag `flag` (a word of its own), and whether it was there; the rest is one path (spaces kept). */
function flagged (text, flag) {
  const words = text.split(/(\s+)/)
  const found = words.some((w) => w === flag)
  return { found, rest: words.filter((w) => w !== flag).join('').trim() }
}

/** A path the user typed, absolute: relative ones are resolved against the session's folder. */
function pathOf (arg, agent) {
  const cwd = agent.session?.header?.cwd
  return isAbsolute(arg) ? arg : resolve(typeof cwd === 'string' ? cwd : process.cwd(), arg)
}

/** `/plur bind <folder>`: `plur project bind FOLDER --to <this session's scope>`, through the service. */
async function bind (arg, agent, scope, call) {
  if (arg === '') return { kind: 'error', text: 'usage: /plur bind <folder>' }
  if (!scope.startsWith('project:')) return { kind: 'error', text: `this session's scope is ${scope}, not a project; bind works in a project folder` }
  const reply = await call('POST', '/project/bind', { folder: pathOf(arg, agent), scope })
  return { kind: 'success', text: `Bound ${reply.bound} to ${reply.scope}: its sessions share this project's notes.` }
}

/** `/plur unbind <folder>`: `plur project unbind FOLDER`, through the service. */
async function unbind (arg, agent, call) {
  if (arg === '') return { kind: 'error', text: 'usage: /plur unbind <folder>' }
  const reply = await call('POST', '/project/unbind', { folder: pathOf(arg, agent) })
  return { kind: 'success', text: `Unbound ${reply.unbound} (was ${reply.was}): it is its own repository's project again.` }
}

/** `/plur export [file] [--force]`: every note, oldest first (`plur export`), through the service. */
async function exportTo (arg, agent, call) {
  const { found: force, rest } = flagged(arg, '--force')
  const name = rest || `plur-export-${new Date().toISOString().slice(0, 10)}.jsonl`
  const reply = await call('POST', '/export', { target: pathOf(name, agent), force })
  return { kind: 'success', text: `Exported ${reply.exported} note${reply.exported === 1 ? '' : 's'} to ${reply.target}.` }
}

/** `/plur import <path> [--dry-run]`: notes from files or folders (`plur import`), through the service. */
async function importFrom (arg, agent, scope, call) {
  const { found: dryRun, rest } = flagged(arg, '--dry-run')
  if (rest === '') return { kind: 'error', text: 'usage: /plur import <path> [--dry-run] (plur exports, Claude or ChatGPT memories, Markdown or text notes)' }
  const reply = await call('POST', '/import', { paths: [pathOf(rest, agent)], scope, dry_run: dryRun })
  const into = reply.scopes.length === 0 ? '' : ` into ${reply.scopes.join(', ')}`
  const secrets = reply.secrets_removed > 0 ? ` Removed ${reply.secrets_removed} credential${reply.secrets_removed === 1 ? '' : 's'} from the text.` : ''
  const where = reply.files.length === 1 ? reply.files[0] : `${reply.files.length} files`
  return { kind: 'success', text: `${dryRun ? 'Would import' : 'Imported'} ${reply.added.length} new note${reply.added.length === 1 ? '' : 's'}, ${reply.already_known.length} already known, from ${where}${into}${dryRun ? ' (--dry-run: nothing written)' : ''}.${secrets}` }
}
