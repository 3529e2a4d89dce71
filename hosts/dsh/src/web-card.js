// The browser half of @plur-ai/dsh for `dsh web`: one card in Settings > Plugins > Plugin configuration,
// bound to the `plur` settings namespace the plugin registers on the host (src/settings.js): memory on/off,
// what capture keeps, and the scope mode. DSH's web shell loads plugin bundles as lazy CJS factories
// (`window.__ModuleLoader__.load({id, factory})`, @deepseek-ai/dsh-client-modules); this file is written in
// that form by hand (no build step), with React and DSH's UI primitives supplied by the shell.
//
// The card is built as DSH's own plugin cards are (@deepseek-ai/dsh-client-ui-settings-plugins' PluginCard):
// a list item whose header button names the plugin and what it governs and discloses its fields in place,
// DSH's field layout (label, control, hint), staged edits with Discard and Save, and an "Unsaved" mark. The
// header also says whether memory is on, off, or waiting for its service, so "off" shows without opening it.
// Save writes through the client settings scope (`ctx.settingsScope`), fenced by the namespace revision, into
// the user's settings document; the host plugin applies it at once.
window.__ModuleLoader__.load({
  id: '@plur-ai/dsh',
  factory: (require) => {
    const module = { exports: {} }
    const react = require('react')
    const h = react.createElement
    let primitives = {}
    try { primitives = require('@deepseek-ai/dsh-client-ui-primitives') ?? {} } catch { primitives = {} }
    const NAMESPACE = 'plur'
    const TITLE = 'plur memory'
    const CAPTURE = [['user', 'What you type'], ['all', 'What you type and the answers'], ['off', 'Nothing']]
    const MEMORY = [['on', 'On: notes in every request, the plur_* tools'], ['off', 'Off: no notes, no tools (nothing is deleted)']]
    const MODES = [['project', "The session folder's project"], ['global', 'Global (personal notes only)'], ['fixed', 'One fixed scope']]

    // DSH's card and field styles (PluginCard.module.css, fields.module.css), under names of our own.
    const CSS_ID = '@plur-ai/dsh/card.css'
    const CSS = '.plur-card{border:1px solid var(--dsw-alias-border-l2);background:var(--dsw-alias-bg-layer-3);border-radius:12px;list-style:none;transition:border-color .16s,background .16s}' +
      '.plur-card:hover{border-color:var(--dsw-alias-label-dimmed)}.plur-card[data-open=true]{background:var(--dsw-alias-bg-layer-2);border-color:var(--dsw-alias-label-dimmed)}' +
      '.plur-card-header{appearance:none;width:100%;font:inherit;color:inherit;text-align:left;cursor:pointer;background:0 0;border:0;border-radius:12px;align-items:center;gap:12px;padding:14px 16px;display:flex}' +
      '.plur-card-header:focus-visible{outline:2px solid var(--dsw-alias-brand-primary);outline-offset:-2px}' +
      '.plur-card-head-text{flex-direction:column;flex:1;gap:4px;min-width:0;display:flex}' +
      '.plur-card-name{color:var(--dsw-alias-label-primary);font-size:15px;font-weight:600;line-height:1.4}' +
      '.plur-card-description{color:var(--dsw-alias-label-tertiary);font-size:13px;line-height:1.5}' +
      '.plur-card-pill{white-space:nowrap;background:var(--dsw-alias-bg-module-platform);color:var(--dsw-alias-label-secondary);border-radius:999px;flex:none;padding:1px 8px;font-size:11px;font-weight:500;line-height:17px}' +
      '.plur-card-pill[data-state=off],.plur-card-pill[data-state=failed]{color:var(--dsw-alias-label-error)}' +
      '.plur-card-chevron{color:var(--dsw-alias-label-tertiary);flex:none;transition:transform .16s}.plur-card[data-open=true] .plur-card-chevron{transform:rotate(180deg)}' +
      '.plur-card-body{border-top:1px solid var(--dsw-alias-border-l2);margin:0 16px;padding-bottom:8px}' +
      '.plur-card-field{flex-direction:column;gap:6px;padding:12px 0;display:flex}.plur-card-field+.plur-card-field{border-top:1px solid var(--dsw-alias-border-l2)}' +
      '.plur-card-label{color:var(--dsw-alias-label-primary);font-size:13px;font-weight:500;line-height:1.5}' +
      '.plur-card-input{border:1px solid var(--dsw-alias-border-l2);background:var(--dsw-alias-bg-layer-3);height:34px;font:inherit;color:var(--dsw-alias-label-primary);border-radius:8px;padding:0 12px;font-size:13px;line-height:1.5}' +
      '.plur-card-input:focus-visible{border-color:var(--dsw-alias-brand-primary);outline:none}.plur-card-input:disabled{color:var(--dsw-alias-label-tertiary);cursor:default}' +
      '.plur-card-hint,.plur-card-note{color:var(--dsw-alias-label-tertiary);margin:0;font-size:12px;line-height:1.5}.plur-card-note{padding:12px 0 0}' +
      '.plur-card-note[data-plur-service=off]{color:var(--dsw-alias-label-secondary)}' +
      '.plur-card-footer{border-top:1px solid var(--dsw-alias-border-l2);justify-content:flex-end;align-items:center;gap:8px;padding:12px 0 4px;display:flex;margin-top:12px}' +
      '.plur-card-failed{min-width:0;color:var(--dsw-alias-label-error);flex:1;margin:0;font-size:12px;line-height:1.5}' +
      '.plur-card-discard,.plur-card-save{appearance:none;font:inherit;cursor:pointer;border:1px solid #0000;border-radius:8px;padding:5px 14px;font-size:13px;line-height:1.5}' +
      '.plur-card-discard{border-color:var(--dsw-alias-border-l2);color:var(--dsw-alias-label-secondary);background:0 0}' +
      '.plur-card-save{background:var(--dsw-alias-label-primary);color:var(--dsw-alias-bg-layer-3)}' +
      '.plur-card-discard:disabled,.plur-card-save:disabled{opacity:.4;cursor:default}'
    function injectCss () {
      if (typeof document === 'undefined' || document.querySelector(`style[data-plugin-css="${CSS_ID}"]`) !== null) return
      const tag = document.createElement('style')
      tag.dataset.plugin = '@plur-ai/dsh'
      tag.dataset.pluginCss = CSS_ID
      tag.textContent = CSS
      document.head.appendChild(tag)
    }

    /** The scope setting's mode: the session folder's project, global, or one fixed scope. */
    function modeOf (scope) {
      return scope === undefined || scope === 'cwd' || scope === 'project' ? 'project' : scope === 'global' ? 'global' : 'fixed'
    }

    /** The header's state: `{state, text}`; memory switched off wins over everything the service says. */
    function statusPill (value, service) {
      if (value.enabled === false) return { state: 'off', text: 'Off' }
      if (service === undefined) return { state: 'loading', text: '…' }
      if (service.state === 'running') return { state: 'on', text: 'On' }
      if (service.state === 'starting') return { state: 'starting', text: 'Starting' }
      if (service.state === 'failed') return { state: 'failed', text: 'Service failed' }
      return { state: 'not-running', text: 'Service not running' }
    }

    /** The card's line about the service: memory off says so (the service may well be running for others). */
    function serviceLine (value, service) {
      if (value.enabled === false) return { state: 'off', text: 'Memory is off: no notes and no plur_* tools in any request, nothing captured; nothing is deleted. Switch it on to use memory again.' }
      if (service === undefined) return { state: 'loading', text: 'Service: …' }
      if (service.state === 'running') return { state: 'running', text: `Service: running at ${service.url} (plur ${service.version ?? '?'}, ${service.engrams ?? '?'} notes)` }
      return { state: service.state, text: `Service: ${service.state}${service.reason ? ` (${service.reason})` : ''}` }
    }

    function field (id, label, hint, control) {
      return h('div', { className: 'plur-card-field', key: id },
        h('label', { className: 'plur-card-label', htmlFor: id }, label),
        control,
        hint ? h('p', { className: 'plur-card-hint' }, hint) : null)
    }

    function apply (ctx) {
      injectCss()
      const scope = ctx.settingsScope.bind({ namespace: NAMESPACE })
      ctx.effect(() => () => scope.dispose?.(), 'plur: settings scope')

      function PlurCard () {
        const snap = react.useSyncExternalStore((listener) => scope.subscribe(listener), () => scope.getSnapshot())
        const value = snap.value ?? {}
        const readOnly = !snap.writable
        const [open, setOpen] = react.useState(false)
        // staged edits, as DSH's cards keep them: written by Save, dropped by Discard, kept while collapsed
        const [draft, setDraft] = react.useState({})
        const [saving, setSaving] = react.useState(false)
        const [failed, setFailed] = react.useState('')
        const [service, setService] = react.useState(undefined)
        react.useEffect(() => {
          let alive = true
          fetch('/plur/status', { cache: 'no-store' }).then((r) => r.json()).then((body) => { if (alive) setService(body) }, (error) => { if (alive) setService({ state: 'unknown', reason: String(error) }) })
          return () => { alive = false }
        }, [value.enabled])
        const saved = { enabled: value.enabled !== false, capture: value.capture ?? 'user', scope: value.scope ?? 'cwd' }
        const shown = { ...saved, ...draft }
        const changed = Object.keys(draft).filter((key) => draft[key] !== saved[key])
        const dirty = changed.length > 0
        const stage = (key, next) => { setFailed(''); setDraft((now) => ({ ...now, [key]: next })) }
        const save = () => {
          setSaving(true)
          setFailed('')
          changed.reduce((done, key) => done.then(() => scope.set(key, draft[key])), Promise.resolve())
            .then(() => { setDraft({}) }, (error) => { setFailed(`Not saved: ${String(error?.message ?? error)}`) })
            .finally(() => { setSaving(false) })
        }
        const mode = modeOf(shown.scope)
        const pill = statusPill(value, service)
        const line = serviceLine(value, service)
        const Chevron = primitives.IconChevronDownOutline14
        const captureHint = service?.captureFromEnv
          ? `PLUR_CAPTURE=${service.capture} in DSH's environment decides for this process, whatever is saved here.`
          : 'What the conversation leaves in memory. Secrets are screened out before anything is stored.'
        return h('li', { className: 'plur-card', 'data-plur-card': '', 'data-open': open ? 'true' : 'false', 'data-memory': saved.enabled ? 'on' : 'off' },
          h('button', { type: 'button', className: 'plur-card-header', 'aria-expanded': open, 'aria-label': `${open ? 'Collapse' : 'Expand'}: ${TITLE}`, onClick: () => { setOpen(!open) } },
            h('span', { className: 'plur-card-head-text' },
              h('span', { className: 'plur-card-name' }, TITLE),
              h('span', { className: 'plur-card-description' }, 'Long-term memory in every request, the plur_* tools, and what the conversation leaves in memory.')),
            dirty ? h('span', { className: 'plur-card-pill', 'data-state': 'unsaved' }, 'Unsaved') : null,
            h('span', { className: 'plur-card-pill', 'data-state': pill.state, 'data-plur-pill': pill.state }, pill.text),
            Chevron ? h(Chevron, { className: 'plur-card-chevron' }) : h('span', { className: 'plur-card-chevron', 'aria-hidden': true }, '▾')),
          open
            ? h('div', { className: 'plur-card-body' },
              readOnly ? h('p', { className: 'plur-card-note', role: 'status' }, 'Read-only here: the host does not let this page change these settings.') : null,
              h('p', { className: 'plur-card-note', role: 'status', 'data-plur-service': line.state }, line.text),
              field('plur-card-memory', 'Memory', 'Off keeps every note; switch it on again to use them.',
                h('select', { id: 'plur-card-memory', className: 'plur-card-input', 'aria-label': 'plur memory', value: shown.enabled ? 'on' : 'off', disabled: readOnly || saving, onChange: (event) => { stage('enabled', event.target.value === 'on') } },
                  MEMORY.map(([key, label]) => h('option', { key, value: key }, label)))),
              field('plur-card-capture', 'Capture', captureHint,
                h('select', { id: 'plur-card-capture', className: 'plur-card-input', 'aria-label': 'plur capture', value: shown.capture, disabled: readOnly || saving, onChange: (event) => { stage('capture', event.target.value) } },
                  CAPTURE.map(([key, label]) => h('option', { key, value: key }, label)))),
              field('plur-card-scope', 'Scope', "Where this host's notes live; a project's sessions see its notes and the global ones.",
                h('select', { id: 'plur-card-scope', className: 'plur-card-input', 'aria-label': 'plur scope mode', value: mode, disabled: readOnly || saving, onChange: (event) => { const next = event.target.value; stage('scope', next === 'project' ? 'cwd' : next === 'global' ? 'global' : (mode === 'fixed' ? shown.scope : 'project:')) } },
                  MODES.map(([key, label]) => h('option', { key, value: key }, label)))),
              mode === 'fixed'
                ? field('plur-card-fixed', 'Fixed scope', 'project:<name> or agent:<name>',
                  h('input', { id: 'plur-card-fixed', className: 'plur-card-input', 'aria-label': 'plur fixed scope', placeholder: 'project:name', value: shown.scope, disabled: readOnly || saving, onChange: (event) => { stage('scope', event.target.value.trim()) } }))
                : null,
              h('p', { className: 'plur-card-note' }, 'The link that logs you in to plur\'s pages: /plur url in a conversation (it works once).'),
              h('div', { className: 'plur-card-footer' },
                failed ? h('p', { className: 'plur-card-failed', role: 'status' }, failed) : null,
                h('button', { type: 'button', className: 'plur-card-discard', disabled: !dirty || saving, onClick: () => { setDraft({}); setFailed('') } }, 'Discard'),
                h('button', { type: 'button', className: 'plur-card-save', disabled: !dirty || saving || readOnly, onClick: save }, saving ? 'Saving…' : 'Save')))
            : null)
      }

      ctx.slots.inject('settings.plugin.item', function * () {
        yield ctx.slots.register({ name: 'settings.plugin.item', key: NAMESPACE }, PlurCard)
      })
    }

    module.exports.inject = ['slots', 'settingsScope']
    module.exports.apply = apply
    module.exports.statusPill = statusPill
    module.exports.serviceLine = serviceLine
    module.exports.modeOf = modeOf
    return module.exports
  },
})
