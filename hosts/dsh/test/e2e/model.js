/**
 * A local HTTP server that speaks DeepSeek's chat-completions API (`POST /chat/completions`,
 * OpenAI-style streaming SSE) and records every request body: what DeepSeek Harness really sent
 * the model (system prompt, messages, tools).
 *
 * The answer is scripted per user question: `script(body)` returns `{text}` (one streamed reply)
 * or `{toolCall: {name, arguments}}` (a tool call, which makes the agent take another step).
 */
import { appendFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import { join } from 'node:path'

/**
 * The text of a chat-completions message (`content` as a string or a list of text parts).
 * @param {{content?: unknown}} message - one entry of `body.messages`.
 * @returns {string} the joined text.
 */
export function contentText (message) {
  const content = message?.content
  if (typeof content === 'string') return content
  if (Array.isArray(content)) return content.map((part) => (typeof part === 'string' ? part : part?.text ?? '')).join('\n')
  return ''
}

/** The system prompt of a recorded request body (`''` when none). */
export function systemOf (body) {
  return (body.messages ?? []).filter((m) => m.role === 'system').map(contentText).join('\n')
}

/**
 * Which scripted question a request answers, and how many tool results the turn has so far.
 * @param {any} body - a recorded request body.
 * @param {string[]} questions - the questions the test asks (exact user texts).
 * @returns {{question: string | undefined, toolResults: number}} the latest of `questions` among
 *   the user-role messages, and the `tool` messages after it.
 */
export function turnOf (body, questions) {
  const messages = body.messages ?? []
  let toolResults = 0
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]
    if (m.role === 'tool') toolResults += 1
    else if (m.role === 'user') {
      const text = contentText(m).trim()
      if (questions.includes(text)) return { question: text, toolResults }
    }
  }
  return { question: undefined, toolResults }
}

/**
 * Start the fake DeepSeek API.
 * @param {{script: (body: any) => ({text: string} | {toolCall: {name: string, arguments: unknown}}), out?: string}} options -
 *   the answer script, and a folder to append `requests.jsonl` to (`{"body": ...}` per line).
 * @returns {Promise<{url: string, requests: any[], waitFor: (count: number, timeoutMs?: number) => Promise<void>, close: () => Promise<void>}>}
 */
export async function startModel (options) {
  const requests = []
  const waiters = []
  let calls = 0
  const server = createServer((req, res) => {
    const chunks = []
    req.on('data', (chunk) => chunks.push(chunk))
    req.on('end', async () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }))
        return
      }
      let body
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch (error) {
        res.writeHead(400, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { message: String(error) } }))
        return
      }
      requests.push(body)
      if (options.out !== undefined) await appendFile(join(options.out, 'requests.jsonl'), JSON.stringify({ body }) + '\n')
      for (const waiter of [...waiters]) waiter()
      const answer = options.script(body)
      const id = `chatcmpl-e2e-${requests.length}`
      const chunk = (delta, finish = null, extra = {}) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body.model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
      const usage = { usage: { prompt_tokens: 100, completion_tokens: 5, total_tokens: 105 } }
      if ('toolCall' in answer) {
        const callId = `call_e2e_${++calls}`
        res.write(chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: callId, type: 'function', function: { name: answer.toolCall.name, arguments: '' } }] }))
        res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify(answer.toolCall.arguments) } }] }))
        res.write(chunk({}, 'tool_calls', usage))
      } else {
        res.write(chunk({ role: 'assistant', content: '' }))
        res.write(chunk({ content: answer.text }))
        res.write(chunk({}, 'stop', usage))
      }
      res.end('data: [DONE]\n\n')
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    /** Resolve once at least `count` requests were recorded (rejects past `timeoutMs`). */
    waitFor (count, timeoutMs = 120000) {
      if (requests.length >= count) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => { done(); reject(new Error(`${requests.length} model requests recorded, waited for ${count} for ${timeoutMs} ms`)) }, timeoutMs)
        const check = () => { if (requests.length >= count) { done(); resolve() } }
        const done = () => { clearTimeout(timer); waiters.splice(waiters.indexOf(check), 1) }
        waiters.push(check)
      })
    },
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()) }),
  }
}
