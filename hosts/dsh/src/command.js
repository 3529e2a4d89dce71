/**
 * The `/plur` command (human-facing): `/plur` or `/plur status`, `/plur recall <query>`,
 * `/plur learn <statement>`, `/plur forget <id>`. Results are shown to the user, never to the model.
 *
 * @module @plur-ai/dsh/command
 */
import { scopeFor } from './scope.js'
import { hitLine, statusText } from './tools.js'

const USAGE = 'usage: /plur [status] | /plur recall <query> | /plur learn <statement> | /plur forget <id>'

/**
 * Register `/plur` in `ctx`'s layer (disposed with `ctx`'s fiber).
 * @param {import('@deepseek-ai/cordis').Context} ctx - a context with the `commands` service.
 * @param {import('./client.js').PlurClient} client - the plur client (tool timeout).
 * @param {import('./cache.js').BlockCache} cache - the block cache (for the status line).
 * @param {{scope: string}} settings - the plugin settings.
 */
export function registerCommand (ctx, client, cache, settings) {
  ctx.commands.register({
    name: 'plur',
    description: 'plur long-term memory: status, recall, learn, forget',
    input: { hint: '[status|recall <query>|learn <statement>|forget <id>]', images: false },
    handler: async ({ agent, rawInput, signal }) => {
      const input = (rawInput ?? '').trim()
      const [verb = 'status', ...rest] = input.split(/\s+/).filter((word) => word !== '')
      const arg = input.slice(verb.length).trim()
      const scope = scopeFor(agent, settings.scope)
      const call = (method, path, body) => client.request(method, path, body, { signal })
      try {
        switch (verb) {
          case 'status': {
            const block = cache.read(agent.id)
            const shown = block === '' ? 'no memory block yet' : `memory block ${block.length} characters (hash ${cache.hash(agent.id)})`
            const note = await client.settingsNote()
            return { kind: 'success', text: `${statusText(await call('GET', '/status'), scope)} ${shown}.${note ? ` Warning: ${note}.` : ''}` }
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
          case 'forget': {
            if (rest.length !== 1) return { kind: 'error', text: 'usage: /plur forget <id>' }
            const reply = await call('POST', '/forget', { id: rest[0] })
            return { kind: 'success', text: `Forgot ${reply.forgotten}.` }
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
