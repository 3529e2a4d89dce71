/**
 * Boot a real DeepSeek Harness host for the tests: the published registries (system prompt, tools,
 * commands, skills, agents, sessions, LLM runtime) and the real agent loop in one Cordis context.
 *
 * The only thing not from DSH is the model: a scripted `LlmAdapter` registered through the host's
 * own adapter registry (`ctx.llm.registerAdapter`), the seam DSH gives every provider. It records
 * the system prompt the loop rendered for each request (what the model actually sees) and can answer
 * with a tool call.
 */
import './es2024.js'
import { Context } from '@deepseek-ai/cordis'
import AgentRegistry, { assembleContextFor } from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import CommandRuntime from '@deepseek-ai/dsh-commands'
import LlmRuntime, { LlmAdapter, createUserMessage } from '@deepseek-ai/dsh-llm'
import SessionStore from '@deepseek-ai/dsh-session'
import SkillRegistry from '@deepseek-ai/dsh-skill'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import ToolRuntime from '@deepseek-ai/dsh-tools'

export const PROVIDER = 'scripted'

/** A model that answers "ok", or a queued tool call, and records every request. */
export class ScriptedModel extends LlmAdapter {
  constructor () {
    super()
    /**
     * @type {Array<{sessionId: string | undefined, system: string, messages: number,
     *   userTexts: Array<{source: string | undefined, text: string}>}>} every request, with the
     *   text of each user-role message in it and that message's `source.kind`.
     */
    this.requests = []
    /** @type {Map<string, Array<{name: string, arguments: unknown}>>} tool calls to make next, one per request, by session id */
    this.toolCalls = new Map()
    /** @type {((request: {sessionId: string | undefined}) => Promise<void>) | undefined} awaited before answering */
    this.beforeAnswer = undefined
    this.calls = 0
  }

  async * stream (options) {
    const userTexts = options.messages.filter((m) => m.role === 'user').map((m) => ({
      source: m.source?.kind,
      text: (m.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('\n'),
    }))
    this.requests.push({ sessionId: options.sessionId, system: options.system ?? '', messages: options.messages.length, userTexts })
    if (this.beforeAnswer !== undefined) await this.beforeAnswer({ sessionId: options.sessionId })
    const queued = this.toolCalls.get(options.sessionId)
    if (queued !== undefined && queued.length > 0) {
      const call = queued.shift()
      const id = `call-${++this.calls}`
      const args = JSON.stringify(call.arguments)
      yield { type: 'block-start', index: 0, blockType: 'tool-call' }
      yield { type: 'tool-call-delta', index: 0, id, name: call.name, argumentsDelta: args }
      yield { type: 'block-end', index: 0, block: { type: 'tool-call', id, name: call.name, arguments: args } }
      yield { type: 'finish', reason: { kind: 'tool-calls' } }
      return
    }
    yield { type: 'block-start', index: 0, blockType: 'text' }
    yield { type: 'text-delta', index: 0, text: 'ok' }
    yield { type: 'block-end', index: 0, block: { type: 'text', text: 'ok' } }
    yield { type: 'finish', reason: { kind: 'stop' } }
  }
}

/**
 * Boot a host.
 * @param {{tools?: boolean, commands?: boolean, skills?: boolean}} [profile] - which optional
 *   registries to compose (all by default); the core (system prompt, agents, sessions, LLM, loop)
 *   is always there.
 */
export async function bootHost (profile = {}) {
  const root = new Context()
  await root.plugin(SystemPrompt, {})
  await root.plugin(AgentRegistry)
  await root.plugin(SessionStore)
  await root.plugin(LlmRuntime)
  if (profile.tools !== false) await root.plugin(ToolRuntime, {})
  if (profile.commands !== false) await root.plugin(CommandRuntime)
  if (profile.skills !== false) await root.plugin(SkillRegistry)
  // The loop injects `tools`; a profile without a tool registry has no loop (and no agents).
  if (profile.tools !== false) await root.plugin(AgentLoop, { agents: [] })
  const model = new ScriptedModel()
  root.llm.registerAdapter([PROVIDER], model)
  const handles = []
  return {
    root,
    model,
    /** Create an agent whose session cwd is `cwd`. */
    async createAgent (sessionId, cwd) {
      const handle = await root.agents.create({ sessionId, meta: cwd === undefined ? {} : { cwd }, agentOptions: { provider: PROVIDER, model: 'scripted-1' } })
      handles.push(handle)
      return handle
    },
    /** One user turn, driven to quiescence. */
    async say (agent, text) {
      agent.followup(createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }))
      await agent.whenIdle()
    },
    /** The assembly the loop would build for this agent now. */
    assembleFor (agent) {
      return root.systemPrompt.assemble(assembleContextFor(agent))
    },
    async close () {
      for (const handle of handles.reverse()) await handle.dispose().catch(() => {})
      await root.registry.get?.(SystemPrompt)?.dispose?.().catch?.(() => {})
    },
  }
}

/** The `plur:memory` section text of an assembly (`undefined` when the section is absent). */
export function memorySection (assembly) {
  const found = assembly.sections.filter((s) => s.name === 'plur:memory')
  if (found.length > 1) throw new Error(`plur:memory appears ${found.length} times in one assembly`)
  return found[0]?.text
}

/**
 * Wait for the plugin's next refresh outcome for `agentId` (the `plur/refresh` event).
 * @returns {Promise<{outcome: string, hash: string, error?: Error, scope: string}>}
 */
export function nextRefresh (root, agentId, timeoutMs = 30000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { off(); reject(new Error(`no plur/refresh for ${agentId} within ${timeoutMs} ms`)) }, timeoutMs)
    const off = root.on('plur/refresh', (payload) => {
      if (payload.agent.id !== agentId) return
      clearTimeout(timer)
      off()
      resolve(payload)
    })
  })
}

/**
 * DSH's settings seam (`ctx.settings`) with an in-memory document: the real `SettingsProvider` of
 * @deepseek-ai/dsh-settings (layering, validation, watchers), only storage is a plain object.
 * `publish(doc)` stands in for an external edit of the settings file.
 */
export async function memorySettings (root, doc = {}) {
  const { SettingsProvider } = await import('@deepseek-ai/dsh-settings')
  class MemorySettings extends SettingsProvider {
    static document = doc
    get writable () { return true }
    async load () { return structuredClone(MemorySettings.document) }
    async persist (ns, section) { MemorySettings.document = { ...MemorySettings.document, [ns]: section } }
    edit (next) { MemorySettings.document = next; this.publish(structuredClone(next)) }
  }
  await root.plugin(MemorySettings)
  return { provider: () => root.settings, document: () => MemorySettings.document, Provider: MemorySettings }
}
