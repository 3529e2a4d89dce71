/**
 * Which plur scope an agent uses, and which text of a step's batch is the recall query.
 *
 * @module @plur-ai/dsh/scope
 */

/** plur's scope syntax (plur.store.engram.SCOPE_RE). */
export const SCOPE_RE = /^(global|(project|agent):[\w.@/-]{1,128})$/
/** Longest query sent for a block, characters (the tail of a long message is dropped). */
export const MAX_QUERY_CHARS = 4000

/**
 * The plur scope an agent's memories live in. Always a concrete scope, never `null`: plur reads a
 * `null` scope as "every scope", which would show one project's memories to another.
 * @param {{session?: {header?: {cwd?: string}}}} agent - the DSH agent (its session header's `cwd`).
 * @param {string} setting - the config's `scope`.
 * @returns {string} `global`, `project:<name>` or `agent:<name>`.
 */
export function scopeFor (agent, setting) {
  if (setting !== 'cwd') return setting
  const cwd = agent.session?.header?.cwd
  if (typeof cwd !== 'string' || cwd === '') return 'global'
  const base = cwd.replace(/[\\/]+$/, '').split(/[\\/]/).pop() ?? ''
  const name = base.replace(/[^\w.@-]/g, '-').slice(0, 128)
  return name === '' || /^[.-]*$/.test(name) ? 'global' : `project:${name}`
}

/**
 * The text of the latest user message in a step's batch (`''` when the batch carries none, e.g.
 * a tool-result step): user-sourced messages first, else any message with text.
 * @param {ReadonlyArray<{content?: ReadonlyArray<{type: string, text?: string}>, source?: {kind?: string}}>} messages
 * @returns {string} at most {@link MAX_QUERY_CHARS} characters.
 */
export function latestUserText (messages) {
  const textOf = (message) => (message.content ?? []).filter((b) => b.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('\n').trim()
  for (const preferUser of [true, false]) {
    for (let i = messages.length - 1; i >= 0; i--) {
      const message = messages[i]
      if (preferUser && message.source?.kind !== 'user') continue
      const text = textOf(message)
      if (text !== '') return text.slice(0, MAX_QUERY_CHARS)
    }
  }
  return ''
}

