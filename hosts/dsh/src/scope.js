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
 * The text the user typed in one DSH message, or `''` when the message is not the user's.
 *
 * Only `source.kind === 'user'` counts: DSH plugins inject user-role messages too (loop-guard
 * nudges, reminders, runtime context) with `source.kind === 'plugin'`, and tool results carry no
 * text block; recalling for those would swap the user's memories for the host's words.
 * @param {{content?: ReadonlyArray<{type: string, text?: string}>, source?: {kind?: string}}} message
 * @returns {string} the joined text blocks, trimmed, at most {@link MAX_QUERY_CHARS} characters.
 */
export function userText (message) {
  return typedText(message).slice(0, MAX_QUERY_CHARS)
}

/**
 * {@link userText} whole (what capture stores).
 * @param {Parameters<typeof userText>[0]} message
 * @returns {string} the joined text blocks, trimmed; `''` when the user did not type the message.
 */
export function typedText (message) {
  if (message?.source?.kind !== 'user') return ''
  return (message.content ?? []).filter((b) => b.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('\n').trim()
}

/**
 * The text of the latest user-typed message in a batch (`''` when it holds none, e.g. a
 * tool-result step or a batch of plugin reminders): see {@link userText}.
 * @param {ReadonlyArray<Parameters<typeof userText>[0]>} messages
 * @returns {string} at most {@link MAX_QUERY_CHARS} characters.
 */
export function latestUserText (messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const text = userText(messages[i])
    if (text !== '') return text
  }
  return ''
}
