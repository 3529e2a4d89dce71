/**
 * The JS-side cache the prompt section reads: one memory block per live agent, replaced (never
 * appended) when a refresh brings a block whose hash differs, dropped when the agent is disposed.
 *
 * Reads are synchronous and allocation-free. Writes come from settled refreshes only, and a reply
 * is applied only when it is newer than every reply already applied for that agent and the agent's
 * entry is still the one the request started on (a late reply for a disposed agent never resurrects
 * it, and a slow older reply never overwrites a newer block). At most {@link MAX_INFLIGHT} refreshes
 * per agent are in flight; starting another aborts the oldest.
 *
 * @module @plur-ai/dsh/cache
 */

/**
 * Make text safe inside a DeepSeek Harness prompt section.
 *
 * dsh-system-prompt's `renderPrompt()` interpolates every complete `{{name}}` group against the
 * registered prompt variables and THROWS on an unknown name, a valueless variable, a malformed
 * group, or a `{{` followed later by any `}}`; there is no escape syntax. Engram text must never
 * reach it with a brace pair, so every `{{` becomes `{ {` and every `}}` becomes `} }` (runs of
 * three or more are split the same way). Nothing else in the section text is special to the
 * renderer; plur's block renderer already neutralises `<`, `>`, `&` and backticks.
 * @param {string} text - the memory block from the service.
 * @returns {string} the same text with no `{{` or `}}` left.
 */
export function neutraliseTemplate (text) {
  return text.replace(/\{(?=\{)/g, '{ ').replace(/\}(?=\})/g, '} ')
}

/** Most refreshes in flight for one agent (a slow service never piles up requests). */
export const MAX_INFLIGHT = 2

/** One agent's cache entry. */
class Entry {
  text = ''
  hash = ''
  /** Number of the newest refresh issued for this agent. */
  issued = 0
  /** Number of the newest refresh whose reply was applied (0: none yet). */
  applied = 0
  /** In-flight refreshes (aborted when the agent is disposed). */
  inflight = new Set()
}

/** Memory blocks by agent id. */
export class BlockCache {
  /** @type {Map<string, Entry>} */
  #entries = new Map()

  /**
   * The block to show an agent: its cached text, or `''` when none has landed yet.
   * @param {string} agentId - `assembly.agent.id`.
   * @returns {string} the section text (already template-safe).
   */
  read (agentId) {
    return this.#entries.get(agentId)?.text ?? ''
  }

  /**
   * The hash of an agent's cached block (`''` when none), as the service computed it.
   * @param {string} agentId - the agent id.
   * @returns {string} the block hash.
   */
  hash (agentId) {
    return this.#entries.get(agentId)?.hash ?? ''
  }

  /** @returns {number} how many agents have an entry. */
  get size () {
    return this.#entries.size
  }

  /**
   * Start a refresh for one agent: returns a ticket to hand back to {@link settle}.
   * @param {string} agentId - the agent id.
   * @returns {{entry: Entry, number: number, controller: AbortController}} the ticket.
   */
  begin (agentId) {
    let entry = this.#entries.get(agentId)
    if (entry === undefined) {
      entry = new Entry()
      this.#entries.set(agentId, entry)
    }
    entry.issued += 1
    if (entry.inflight.size >= MAX_INFLIGHT) {
      const oldest = entry.inflight.values().next().value
      entry.inflight.delete(oldest)
      oldest.abort()
    }
    const controller = new AbortController()
    entry.inflight.add(controller)
    return { agentId, entry, number: entry.issued, controller }
  }

  /**
   * Apply a refresh's reply (or note its failure). A failed, stale, or superseded refresh leaves
   * the cached block as it is.
   * @param {ReturnType<BlockCache['begin']>} ticket - from {@link begin}.
   * @param {{text: string, hash: string} | undefined} reply - the service's block, or undefined
   *   when the refresh failed.
   * @returns {'replaced' | 'unchanged' | 'stale' | 'failed'} what happened to the entry.
   */
  settle (ticket, reply) {
    const { agentId, entry, number, controller } = ticket
    entry.inflight.delete(controller)
    if (this.#entries.get(agentId) !== entry || number <= entry.applied) return 'stale'
    if (reply === undefined) return 'failed'
    entry.applied = number
    if (reply.hash === entry.hash) return 'unchanged'
    entry.text = neutraliseTemplate(reply.text)
    entry.hash = reply.hash
    return 'replaced'
  }

  /**
   * Forget an agent: drop its block and abort its in-flight refreshes.
   * @param {string} agentId - the disposed agent's id.
   */
  clear (agentId) {
    const entry = this.#entries.get(agentId)
    if (entry === undefined) return
    this.#entries.delete(agentId)
    for (const controller of entry.inflight) controller.abort()
    entry.inflight.clear()
  }

  /** Forget every agent (plugin disposal). */
  clearAll () {
    for (const id of [...this.#entries.keys()]) this.clear(id)
  }
}
