// The plur card for `dsh web` (src/web-card.js), rendered in Node with a small stand-in for React: it is built as
// DSH's own plugin cards are (a list item whose header button discloses the fields, staged edits with Discard and
// Save), and it shows memory off as off, not "Service: running" (issue 48). The same card in a real browser and
// the real `dsh web`: test/e2e/control.test.js.
import assert from 'node:assert/strict'
import { test } from 'node:test'

/** A React stand-in: elements as plain objects, hooks kept by call order, effects run after each render. */
function fakeReact () {
  const hooks = []
  const effects = []
  let at = 0
  const react = {
    createElement: (type, props, ...children) => ({ type, props: { ...(props ?? {}), children: children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false) } }),
    useState: (init) => {
      const k = at++
      if (!(k in hooks)) hooks[k] = typeof init === 'function' ? init() : init
      return [hooks[k], (next) => { hooks[k] = typeof next === 'function' ? next(hooks[k]) : next }]
    },
    useSyncExternalStore: (_subscribe, get) => get(),
    useEffect: (fn, deps) => {
      const k = at++
      const key = JSON.stringify(deps)
      if (hooks[k] !== key) { hooks[k] = key; effects.push(fn) }
    },
  }
  const expand = (node) => {
    if (typeof node !== 'object' || node === null) return node
    if (typeof node.type === 'function') return expand(node.type(node.props))
    return { ...node, props: { ...node.props, children: node.props.children.map(expand) } }
  }
  return {
    react,
    render (Component) {
      at = 0
      const tree = expand(h(Component))
      for (const fn of effects.splice(0)) fn()
      return tree
    },
  }
  function h (type) { return { type, props: { children: [] } } }
}

const all = (node, pick) => {
  const out = []
  const walk = (n) => { if (typeof n !== 'object' || n === null) return; if (pick(n)) out.push(n); n.props.children.forEach(walk) }
  walk(node)
  return out
}
const text = (node) => typeof node === 'string' ? node : typeof node !== 'object' || node === null ? '' : node.props.children.map(text).join(' ')

async function loadCard (value, status) {
  let loaded
  globalThis.window = { __ModuleLoader__: { load: (m) => { loaded = m } } }
  await import(`../src/web-card.js?${Math.random()}`)
  const fake = fakeReact()
  const exports = loaded.factory((id) => { if (id === 'react') return fake.react; throw new Error(`no module ${id}`) })
  const snap = { value, writable: true, status: 'ready' }
  const sets = []
  let answered
  const fetched = new Promise((resolve) => { answered = resolve })
  globalThis.fetch = async () => { answered(); return { json: async () => status } }
  let Card
  exports.apply({
    settingsScope: { bind: () => ({ subscribe: () => () => {}, getSnapshot: () => snap, set: async (key, next) => { sets.push([key, next]); snap.value = { ...snap.value, [key]: next } } }) },
    effect: () => {},
    slots: { inject: (_name, gen) => { for (const _ of gen()) { /* registered */ } }, register: (_where, component) => { Card = component } },
  })
  const render = () => fake.render(Card)
  render()
  await fetched
  await new Promise((resolve) => setImmediate(resolve))   // the answer's promise chain settles
  return { exports, render, sets, snap }
}

const running = { state: 'running', url: 'http://127.0.0.1:7777', version: '0.9', engrams: 12, reason: '' }

test('memory off: the header says Off and the card says memory is off, not "Service: running"', async () => {
  const { render } = await loadCard({ enabled: false }, { ...running, enabled: false })
  let card = render()
  assert.equal(card.type, 'li', 'a list item, as DSH\'s cards in their list')
  assert.equal(card.props['data-memory'], 'off')
  assert.equal(all(card, (n) => n.props['data-plur-pill'] !== undefined)[0].props.children[0], 'Off')
  const header = all(card, (n) => n.type === 'button' && n.props['aria-expanded'] !== undefined)[0]
  assert.equal(header.props['aria-label'], 'Expand: plur memory')
  header.props.onClick()
  card = render()
  const line = all(card, (n) => n.props['data-plur-service'] !== undefined)[0]
  assert.equal(line.props['data-plur-service'], 'off')
  assert.match(text(line), /^Memory is off: no notes and no plur_\* tools/)
  assert.doesNotMatch(text(card), /Service: running/)
})

test('memory on: the service\'s state and address; edits are staged, marked Unsaved, and written by Save', async () => {
  const { render, sets } = await loadCard({ enabled: true, capture: 'user', scope: 'cwd' }, { ...running, enabled: true })
  let card = render()
  assert.equal(all(card, (n) => n.props['data-plur-pill'] !== undefined)[0].props.children[0], 'On')
  all(card, (n) => n.props['aria-expanded'] !== undefined)[0].props.onClick()
  card = render()
  assert.match(text(all(card, (n) => n.props['data-plur-service'] !== undefined)[0]), /^Service: running at http:\/\/127\.0\.0\.1:7777 \(plur 0\.9, 12 notes\)$/)
  const select = (label) => all(render(), (n) => n.type === 'select' && n.props['aria-label'] === label)[0]
  select('plur memory').props.onChange({ target: { value: 'off' } })
  select('plur capture').props.onChange({ target: { value: 'off' } })
  card = render()
  assert.ok(all(card, (n) => n.props['data-state'] === 'unsaved').length === 1, 'marked Unsaved')
  assert.deepEqual(sets, [], 'nothing written before Save')
  const save = all(card, (n) => n.type === 'button' && text(n) === 'Save')[0]
  assert.equal(save.props.disabled, false)
  save.props.onClick()
  await new Promise((resolve) => setImmediate(resolve))
  assert.deepEqual(sets, [['enabled', false], ['capture', 'off']])
  card = render()
  assert.equal(all(card, (n) => n.props['data-state'] === 'unsaved').length, 0)
  assert.equal(card.props['data-memory'], 'off')
})

test('statusPill and serviceLine: off wins over the service; a service not running is said', async () => {
  const { exports } = await loadCard({}, running)
  assert.deepEqual(exports.statusPill({ enabled: false }, running), { state: 'off', text: 'Off' })
  assert.deepEqual(exports.statusPill({}, { state: 'not running' }), { state: 'not-running', text: 'Service not running' })
  assert.equal(exports.serviceLine({}, { state: 'failed', reason: 'no plur' }).text, 'Service: failed (no plur)')
  assert.equal(exports.modeOf('project:x'), 'fixed')
})
