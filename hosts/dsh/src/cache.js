/**
 * The JS-side cache the prompt section reads: one memory block per live agent, replaced (never
 * appended), dropped when the agent is disposed.
 *
 * Two texts per agent: the newest block a refresh brought (`latest`), and the block the section
 * shows (`read`). The shown block changes only at {@link BlockCache#show}, which the plugin calls
 * at the first assembly after a user message, so every model request of one turn carries the
 * same block (byte-identical system prompt) even when a refresh lands mid-turn.
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
 * renderer; plur's block renderer already neutralises `<`, `>`, `&` and runs of 3+ backticks.
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
  /** The newest block applied (template-safe) and its hash. */
  text = ''
  hash = ''
  /** The block the section shows, and its hash. */
  shownText = ''
  shownHash = ''
  /** How many times {@link BlockCache#show} ran for this agent. */
  shows = 0
  /** A refresh started since the last show (a new user message). */
  fresh = false
  /** Number of the newest refresh issued for this agent. */
  issued = 0
  /** Number of the newest refresh whose reply was applied (0: none yet). */
  applied = 0
  /** In-flight refreshes (aborted when the agent is disposed). */
  inflight = new Set()
  /** Resolves when the newest issued refresh settles (never rejects). */
  newest = Promise.resolve()
  /** Resolve function of {@link newest} while that refresh is in flight. */
  settleNewest = undefined
}

/** Memory blocks by agent id. */
export class BlockCache {
  /** @type {Map<string, Entry>} */
  #entries = new Map()

  /**
   * The block the section shows an agent now, or `''` when none was shown yet.
   * @param {string} agentId - `assembly.agent.id`.
   * @returns {string} the section text (already template-safe).
   */
  read (agentId) {
    return this.#entries.get(agentId)?.shownText ?? ''
  }

  /**
   * The hash of the block shown to an agent (`''` when none), as the service computed it.
   * @param {string} agentId - the agent id.
   * @returns {string} the block hash.
   */
  hash (agentId) {
    return this.#entries.get(agentId)?.shownHash ?? ''
  }

  /**
   * The newest block a refresh brought for an agent (shown from the next {@link show} on).
   * @param {string} agentId - the agent id.
   * @returns {{text: string, hash: string}} `''`s when none.
   */
  latest (agentId) {
    const entry = this.#entries.get(agentId)
    return { text: entry?.text ?? '', hash: entry?.hash ?? '' }
  }

  /**
   * Whether a refresh started since the agent's last {@link show} (a new user message).
   * @param {string} agentId - the agent id.
   * @returns {boolean} true when the next assembly should show a new block.
   */
  isFresh (agentId) {
    return this.#entries.get(agentId)?.fresh === true
  }

  /**
   * How many blocks were shown to an agent so far (0 before its first assembly with a query).
   * @param {string} agentId - the agent id.
   * @returns {number} the count.
   */
  shows (agentId) {
    return this.#entries.get(agentId)?.shows ?? 0
  }

  /**
   * Wait until the agent's newest refresh settles, at most `boundMs`.
   * @param {string} agentId - the agent id.
   * @param {number} boundMs - the longest wait, ms (0: do not wait).
   * @param {AbortSignal} [signal] - stops the wait early (the turn was aborted).
   * @returns {Promise<boolean>} true when it settled within the bound (false: timed out, aborted,
   *   or no entry).
   */
  async settled (agentId, boundMs, signal) {
    const entry = this.#entries.get(agentId)
    if (entry === undefined) return false
    if (entry.settleNewest === undefined) return true
    if (boundMs <= 0 || signal?.aborted) return false
    let timer
    let onAbort
    const bound = new Promise((resolve) => {
      timer = setTimeout(resolve, boundMs, false)
      onAbort = () => resolve(false)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
    try {
      // A newer refresh starting meanwhile wakes the wait (begin resolves the older promise);
      // loop until the newest one settled, within the same bound.
      while (entry.settleNewest !== undefined) {
        if (!await Promise.race([entry.newest.then(() => true), bound])) return false
      }
      return this.#entries.get(agentId) === entry
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
  }

  /**
   * Show the agent's newest block from now on (the first assembly after a user message).
   * @param {string} agentId - the agent id.
   * @returns {boolean} true when the shown text changed.
   */
  show (agentId) {
    const entry = this.#entries.get(agentId)
    if (entry === undefined) return false
    entry.fresh = false
    entry.shows += 1
    const changed = entry.shownText !== entry.text
    entry.shownText = entry.text
    entry.shownHash = entry.hash
    return changed
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
    entry.fresh = true
    entry.settleNewest?.()
    entry.newest = new Promise((resolve) => { entry.settleNewest = resolve })
    const settleThis = entry.settleNewest
    if (entry.inflight.size >= MAX_INFLIGHT) {
      const oldest = entry.inflight.values().next().value
      entry.inflight.delete(oldest)
      oldest.abort()
    }
    const controller = new AbortController()
    entry.inflight.add(controller)
    return { agentId, entry, number: entry.issued, controller, settleThis }
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
    const { agentId, entry, number, controller, settleThis } = ticket
    entry.inflight.delete(controller)
    if (entry.settleNewest === settleThis) {
      entry.settleNewest = undefined
      settleThis()
    }
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
    entry.settleNewest?.()
    entry.settleNewest = undefined
  }

  /** Forget every agent (plugin disposal). */
  clearAll () {
    for (const id of [...this.#entries.keys()]) this.clear(id)
  }
}
