/**
 * Which plur scope an agent uses, and which text of a step's batch is the recall query.
 *
 * @module @plur-ai/dsh/scope
 */

import { resolveHome } from './client.js'
import { resolveProject } from './project.js'
import { SCHEMA } from './schema.js'

/** plur's scope syntax (plur.store.engram.SCOPE_RE): names of letters and digits of any script. */
export const SCOPE_RE = new RegExp(SCHEMA.scope_pattern, 'u')
/** Longest query sent for a block, characters (the tail of a long message is dropped). */
export const MAX_QUERY_CHARS = 4000

/**
 * The plur scope an agent's memories live in. Always a concrete scope, never `null`: plur reads a
 * `null` scope as "every scope", which would show one project's memories to another.
 *
 * With `setting` `'cwd'` it is the project of the session's workspace (`session.header.cwd`), as
 * plur's own doors resolve it ({@link resolveProject}: git root, bound folders, the home's registry
 * of roots), e.g. `project:我的项目`; `global` only for a session without a workspace.
 * @param {{session?: {header?: {cwd?: string}}}} agent - the DSH agent (its session header's `cwd`).
 * @param {string} setting - the config's `scope`.
 * @param {string} [home] - the plur home whose `projects.json` names the roots (default `$PLUR_HOME` / `~/.plur`).
 * @returns {string} `global`, `project:<name>` or `agent:<name>`.
 */
export function scopeFor (agent, setting, home) {
  if (setting !== 'cwd' && setting !== 'project') return setting
  const cwd = agent.session?.header?.cwd
  if (typeof cwd !== 'string' || cwd === '') return 'global'
  return resolveProject(cwd, resolveHome(home)).scope
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
