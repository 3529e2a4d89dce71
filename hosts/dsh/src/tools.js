/**
 * Memory tools for the model, registered through the host's tool registry (`ctx.tools`).
 *
 * Each tool is one plur API call; failures (no service, timeout, a plur validation error) are
 * thrown as one-line errors, which the registry turns into the tool's error result
 * (`Error: <message>`) instead of failing the turn.
 *
 * @module @plur-ai/dsh/tools
 */
import { importFromHost } from './host.js'
import { SCHEMA } from './schema.js'
import { scopeFor } from './scope.js'

/** Most hits a recall returns to the model. */
export const MAX_RECALL_K = 50
/** Most engrams one plur_list or /plur list returns. */
export const MAX_LIST = 200

/** One engram as a line the model reads. */
export function engramLine (engram) {
  const tags = engram.tags?.length ? ` tags=${engram.tags.join(',')}` : ''
  return `[${engram.id}] (${engram.type}, ${engram.scope}${tags}${engram.pinned ? ', pinned' : ''}) ${engram.statement}`
}

/** One recall hit as a line: rank, engram, and a mark when the relevance floor keeps it out of the memory block
 * or a newer hit states the same fact later (plur's newest-first rule). */
export function hitLine (hit) {
  const floor = hit.below_floor ? ' (below the relevance floor: weak match, not in the memory block)' : ''
  const earlier = hit.earlier_than ? ` (earlier version: ${hit.earlier_than} states this later)` : ''
  return `${hit.rank}. ${engramLine(hit.engram)}${floor}${earlier}`
}

const text = { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] }

/**
 * Register the eight memory tools in `ctx`'s layer (disposed with `ctx`'s fiber).
 * @param {import('@deepseek-ai/cordis').Context} ctx - a context with the `tools` service.
 * @param {import('./client.js').PlurClient} client - the plur client (tool timeout).
 * @param {{scope: string}} settings - the plugin settings (scope policy).
 * @returns {Promise<{from: string, unregister: () => void}>} where `@deepseek-ai/dsh-tools` was
 *   imported from, once every tool is registered, and a function that removes them again.
 * @throws {Error} when `@deepseek-ai/dsh-tools` cannot be imported (see {@link importFromHost}).
 */
export async function registerTools (ctx, client, settings) {
  const { module: { defineTool }, from } = await importFromHost('@deepseek-ai/dsh-tools', { own: () => import('@deepseek-ai/dsh-tools') })
  const disposers = []
  const register = (tool) => { disposers.push(ctx.tools.register(tool)) }
  const scopeOf = (exec) => (exec.agent === undefined ? (settings.scope === 'cwd' ? 'global' : settings.scope) : scopeFor(exec.agent, settings.scope, settings.home))
  const call = (method, path, body, exec) => client.request(method, path, body, { signal: exec.signal })
  /**
   * The engram `id` if this agent's model may touch it, as `plur mcp --scope` rules: it sees its scope and
   * global, and forgets only in its scope. Another project's engram is answered like an absent one.
   */
  const engramFor = async (id, exec, forget) => {
    const scope = scopeOf(exec)
    let engram
    try {
      engram = (await call('GET', `/engrams/${encodeURIComponent(String(id))}`, undefined, exec)).engram
    } catch (error) {
      if (error.status !== 404 || error.type === 'InvalidIdError') throw error
    }
    if (engram === undefined || (engram.scope !== scope && engram.scope !== 'global')) {
      throw new Error(`no engram ${JSON.stringify(id)} in this agent's scope ${scope} (or global); find ids with plur_recall`)
    }
    if (forget && engram.scope !== scope) {
      throw new Error(`engram ${id} is in scope ${engram.scope}; this agent may only change or forget engrams in ${scope}`)
    }
    return engram
  }

  register(defineTool({
    name: 'plur_recall',
    description: 'Search long-term memory (plur) for engrams relevant to a query. The memory block in the system prompt already shows the most relevant ones; use this to look further or more precisely.',
    parameters: {
      query: { type: 'string', required: true, description: 'What to look for, in natural language.' },
      k: { type: 'integer', description: `How many engrams to return (1-${MAX_RECALL_K}, default 8).` },
    },
    output: text,
    isConcurrencySafe: () => true,
    async execute (args, exec) {
      const k = Math.min(Math.max(args.k ?? 8, 1), MAX_RECALL_K)
      const reply = await call('POST', '/recall', { query: args.query, k, scope: scopeOf(exec) }, exec)
      if (reply.hits.length === 0) return `No engram matches ${JSON.stringify(args.query)}.`
      return reply.hits.map(hitLine).join('\n')
    },
  }))

  register(defineTool({
    name: 'plur_learn',
    description: 'Remember one durable fact, preference or procedure in long-term memory (plur), for this and later sessions. One self-contained statement per call.',
    parameters: {
      statement: { type: 'string', required: true, description: 'The statement to remember, self-contained (names, not pronouns).' },
      type: { type: 'string', enum: [...SCHEMA.types], description: `Kind of engram: ${SCHEMA.types.join(', ')} ('user': about the user; default ${SCHEMA.default_type}).` },
      tags: { type: 'array', items: { type: 'string' }, description: 'Optional tags.' },
      pinned: { type: 'boolean', description: 'Always show it in the memory block (default false).' },
      about: { type: 'string', enum: ['user', 'project'], description: "Whom it is about: 'user' (the user's life: family, health, identity, preferences, habits; kept for every project) or 'project' (the code or this project's work; stays in this project). Omit it to let plur decide." },
    },
    output: text,
    async execute (args, exec) {
      // about: 'user' -> global, 'project' -> this agent's scope, unsaid -> the service decides (setting route_personal)
      const body = { statement: args.statement, type: args.type ?? SCHEMA.default_type, scope: scopeOf(exec), tags: args.tags ?? [], pinned: args.pinned ?? false, about: args.about ?? 'auto' }
      const reply = await call('POST', '/learn', body, exec)
      return `${reply.created ? 'Learned' : 'Already known'} ${reply.engram.id} in ${reply.engram.scope}.`
    },
  }))

  register(defineTool({
    name: 'plur_forget',
    description: 'Delete one engram from long-term memory (plur) by its id, e.g. when the user says it is wrong or outdated.',
    parameters: { id: { type: 'string', required: true, description: 'The engram id, as shown in brackets.' } },
    output: text,
    async execute (args, exec) {
      await engramFor(args.id, exec, true)
      const reply = await call('POST', '/forget', { id: args.id }, exec)
      return `Forgot ${reply.forgotten}.`
    },
  }))

  register(defineTool({
    name: 'plur_show',
    description: 'Show one engram of long-term memory (plur) whole, by its id: statement, type, scope, tags, dates, provenance.',
    parameters: { id: { type: 'string', required: true, description: 'The engram id, as shown in brackets.' } },
    output: text,
    isConcurrencySafe: () => true,
    async execute (args, exec) {
      return engramText(await engramFor(args.id, exec, false))
    },
  }))

  register(defineTool({
    name: 'plur_list',
    description: 'List engrams of long-term memory (plur) in this agent\'s scope and global, newest first, optionally filtered by type, tag or words in the statement.',
    parameters: {
      type: { type: 'string', enum: [...SCHEMA.types], description: 'Only engrams of this type.' },
      tag: { type: 'string', description: 'Only engrams with this tag.' },
      text: { type: 'string', description: 'Only engrams whose statement contains this text (case-insensitive).' },
      limit: { type: 'integer', description: `How many to return (1-${MAX_LIST}, default 20).` },
    },
    output: text,
    isConcurrencySafe: () => true,
    async execute (args, exec) {
      const limit = Math.min(Math.max(args.limit ?? 20, 1), MAX_LIST)
      const rows = await listVisible(client, scopeOf(exec), { type: args.type, tag: args.tag, text: args.text }, limit, exec.signal)
      if (rows.length === 0) return `No engram in ${scopeOf(exec)} or global matches.`
      return rows.map(engramLine).join('\n')
    },
  }))

  register(defineTool({
    name: 'plur_update',
    description: 'Correct one engram of long-term memory (plur) in place, by its id: its statement, type, tags or pinned flag. Use it when the user changes or corrects something remembered ("make that 2 spaces").',
    parameters: {
      id: { type: 'string', required: true, description: 'The engram id, as shown in brackets.' },
      statement: { type: 'string', description: 'The corrected statement, self-contained.' },
      type: { type: 'string', enum: [...SCHEMA.types], description: `Kind of engram: ${SCHEMA.types.join(', ')}.` },
      tags: { type: 'array', items: { type: 'string' }, description: 'The new tags (replace the old ones).' },
      pinned: { type: 'boolean', description: 'Always show it in the memory block.' },
    },
    output: text,
    async execute (args, exec) {
      const changes = Object.fromEntries(['statement', 'type', 'tags', 'pinned'].filter((k) => args[k] !== undefined).map((k) => [k, args[k]]))
      if (Object.keys(changes).length === 0) throw new Error('plur_update needs at least one of statement, type, tags, pinned')
      await engramFor(args.id, exec, true)
      const reply = await call('POST', '/update', { id: args.id, ...changes }, exec)
      return `Updated ${engramLine(reply.engram)}`
    },
  }))

  register(defineTool({
    name: 'plur_feedback',
    description: 'Tell long-term memory (plur) whether an engram it showed was useful for the current task; this tunes later recall.',
    parameters: {
      id: { type: 'string', required: true, description: 'The engram id.' },
      useful: { type: 'boolean', required: true, description: 'true if it helped, false if it was irrelevant or wrong.' },
    },
    output: text,
    async execute (args, exec) {
      await engramFor(args.id, exec, false)
      const reply = await call('POST', '/feedback', { id: args.id, useful: args.useful, agent_id: exec.agent?.id ?? null, query: null }, exec)
      return `Feedback recorded for ${reply.id}: useful ${reply.useful}, not useful ${reply.not_useful}.`
    },
  }))

  register(defineTool({
    name: 'plur_status',
    description: 'Show the state of long-term memory (plur): service version, number of engrams, embedding model, and the scope this agent uses.',
    parameters: {},
    output: text,
    isConcurrencySafe: () => true,
    async execute (_args, exec) {
      const note = await client.settingsNote()
      return statusText(await call('GET', '/status', undefined, exec), scopeOf(exec)) + (note ? ` Warning: ${note}.` : '')
    },
  }))
  return { from, unregister: () => { for (const dispose of disposers.splice(0)) dispose() } }
}

/**
 * An engram whole, one field a line (plur_show, /plur show).
 * @param {Record<string, any>} engram - the engram as the API gives it.
 * @returns {string} the text.
 */
export function engramText (engram) {
  const lines = [`[${engram.id}] ${engram.statement}`, `type: ${engram.type}`, `scope: ${engram.scope}`]
  if (engram.tags?.length) lines.push(`tags: ${engram.tags.join(', ')}`)
  if (engram.pinned) lines.push('pinned: yes')
  if (engram.status && engram.status !== 'active') lines.push(`status: ${engram.status}`)
  for (const key of ['created', 'updated', 'valid_until', 'supersedes']) if (engram[key]) lines.push(`${key.replace('_', ' ')}: ${engram[key]}`)
  const source = engram.source
  if (source && typeof source === 'object' && Object.keys(source).length > 0) {
    lines.push(`source: ${Object.entries(source).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(', ')}`)
  }
  return lines.join('\n')
}

/**
 * The engrams an agent sees (its scope, then global), newest first, at most `limit`.
 * @param {import('./client.js').PlurClient} client - the plur client.
 * @param {string} scope - the agent's scope.
 * @param {{type?: string, tag?: string, text?: string}} filters - optional filters.
 * @param {number} limit - most engrams returned.
 * @param {AbortSignal} [signal] - the caller's signal.
 * @returns {Promise<Array<Record<string, any>>>} the engrams.
 */
export async function listVisible (client, scope, filters, limit, signal) {
  const scopes = scope === 'global' ? ['global'] : [scope, 'global']
  const rows = []
  for (const s of scopes) {
    const reply = await client.request('POST', '/list', { scope: s, status: 'active', limit, ...filters }, { signal })
    rows.push(...reply.engrams)
  }
  return rows.sort((a, b) => String(b.created).localeCompare(String(a.created))).slice(0, limit)
}

/**
 * One-paragraph status shared by the tool and the `/plur` command.
 * @param {{version?: string, engrams?: number, home?: string, model?: Record<string, unknown>}} status - `GET /api/v1/status`.
 * @param {string} scope - the scope this agent uses.
 * @returns {string} the status text.
 */
export function statusText (status, scope) {
  const model = status.model?.name ?? status.model?.id ?? status.model?.model ?? 'unknown model'
  return `plur ${status.version ?? '?'}: ${status.engrams ?? '?'} engrams in ${status.home ?? '?'}; model ${model}; this agent's scope: ${scope} (plus global).`
}
