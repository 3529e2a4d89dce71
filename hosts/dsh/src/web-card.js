// The browser half of @plur-ai/dsh for `dsh web`: one card in Settings > Plugins > Plugin configuration,
// bound to the `plur` settings namespace the plugin registers on the host (src/settings.js): memory on/off,
// what capture keeps, and the scope mode. DSH's web shell loads plugin bundles as lazy CJS factories
// (`window.__ModuleLoader__.load({id, factory})`, @deepseek-ai/dsh-client-modules); this file is written in
// that form by hand (no build step), with React and the settings services supplied by the shell.
// Writes go through the client settings scope (`ctx.settingsScope`), fenced by the namespace revision, into
// the user's settings document; the host plugin applies them at once.
window.__ModuleLoader__.load({
  id: '@plur-ai/dsh',
  factory: (require) => {
    const module = { exports: {} }
    const react = require('react')
    const h = react.createElement
    const NAMESPACE = 'plur'
    const CAPTURE = [['user', 'what you type'], ['all', 'also the answers'], ['off', 'nothing']]

    function apply (ctx) {
      const scope = ctx.settingsScope.bind({ namespace: NAMESPACE })
      ctx.effect(() => () => scope.dispose?.(), 'plur: settings scope')

      function PlurCard () {
        const snap = react.useSyncExternalStore((listener) => scope.subscribe(listener), () => scope.getSnapshot())
        const value = snap.value ?? {}
        const readOnly = !snap.writable
        const [fixed, setFixed] = react.useState('')
        // what the user just chose, shown until the host's answer folds into the snapshot
        const [pending, setPending] = react.useState({})
        const [service, setService] = react.useState(undefined)
        react.useEffect(() => {
          let alive = true
          fetch('/plur/status', { cache: 'no-store' }).then((r) => r.json()).then((body) => { if (alive) setService(body) }, (error) => { if (alive) setService({ state: 'unknown', reason: String(error) }) })
          return () => { alive = false }
        }, [snap.value?.enabled])
        const shown = { ...value, ...pending }
        const choose = (field, next) => {
          setPending((now) => ({ ...now, [field]: next }))
          Promise.resolve(scope.set(field, next)).finally(() => setPending((now) => {
            const { [field]: _done, ...rest } = now
            return rest
          }))
        }
        const mode = shown.scope === undefined || shown.scope === 'cwd' || shown.scope === 'project' ? 'project' : shown.scope === 'global' ? 'global' : 'fixed'
        const row = (label, control) => h('label', { style: { display: 'flex', gap: '8px', alignItems: 'center', margin: '6px 0' } }, h('span', { style: { minWidth: '120px' } }, label), control)
        return h('section', { 'aria-label': 'plur memory settings', style: { border: '1px solid var(--dsw-alias-border-primary, rgba(0,0,0,.1))', borderRadius: '16px', padding: '16px', marginTop: '8px' } },
          h('h3', { style: { margin: '0 0 4px', fontSize: '16px', fontWeight: 600 } }, 'plur memory'),
          h('p', { style: { margin: '0 0 8px', opacity: 0.75, fontSize: '13px' } }, 'Long-term memory in every request, the plur_* tools, and what the conversation leaves in memory. Off deletes nothing.'),
          row('Memory', h('input', {
            type: 'checkbox', role: 'switch', 'aria-label': 'plur memory on', checked: shown.enabled !== false, disabled: readOnly,
            onChange: (event) => { choose('enabled', event.target.checked) },
          })),
          row('Capture', h('select', {
            'aria-label': 'plur capture', value: shown.capture ?? 'user', disabled: readOnly,
            onChange: (event) => { choose('capture', event.target.value) },
          }, CAPTURE.map(([key, label]) => h('option', { key, value: key }, `${key}: ${label}`)))),
          row('Scope', h('select', {
            'aria-label': 'plur scope mode', value: mode, disabled: readOnly,
            onChange: (event) => {
              const next = event.target.value
              if (next === 'project') choose('scope', 'cwd')
              else if (next === 'global') choose('scope', 'global')
              else setFixed(value.scope ?? '')
            },
          }, [['project', "the session folder's project"], ['global', 'global'], ['fixed', 'one fixed scope']].map(([key, label]) => h('option', { key, value: key }, label)))),
          mode === 'fixed' || fixed !== ''
            ? row('Fixed scope', h('input', {
              'aria-label': 'plur fixed scope', placeholder: 'project:name', defaultValue: mode === 'fixed' ? value.scope : fixed, disabled: readOnly,
              onBlur: (event) => { if (event.target.value.trim() !== '') choose('scope', event.target.value.trim()) },
            }))
            : null,
          h('p', { 'data-plur-service': service?.state ?? 'loading', style: { margin: '8px 0 0', fontSize: '13px' } },
            service === undefined ? 'Service: …'
              : service.state === 'running' ? `Service: running at ${service.url} (plur ${service.version ?? '?'}, ${service.engrams ?? '?'} notes)`
                : `Service: ${service.state}${service.reason ? ` (${service.reason})` : ''}`),
          h('p', { 'data-plur-state': snap.status, style: { margin: '4px 0 0', opacity: 0.75, fontSize: '12px' } },
            `Settings ${snap.status}${readOnly ? ' (read-only here)' : ''}. The link that logs you in to plur's pages: /plur url in a conversation (it works once).`))
      }

      ctx.slots.inject('settings.plugin.item', function * () {
        yield ctx.slots.register({ name: 'settings.plugin.item', key: NAMESPACE }, PlurCard)
      })
    }

    module.exports.inject = ['slots', 'settingsScope']
    module.exports.apply = apply
    return module.exports
  },
})
