/**
 * The settings a user changes while DeepSeek Harness runs: `enabled`, `capture`, `scope`.
 *
 * When the host composes DSH's settings seam (`ctx.settings`, `@deepseek-ai/dsh-settings`), the plugin
 * registers the namespace `plur` there: its value is layered as the schema's defaults, then the
 * plugin's profile config (the composition `base`), then the user's settings document
 * (`$DSH_HOME/settings.yaml` with the file provider, edited by hand or by a settings surface), and
 * changes apply at once (`watch`). Without the seam the same keys come from the profile patch config
 * only. Either way the plugin reads them through {@link LiveSettings#get}.
 *
 * @module @plur-ai/dsh/settings
 */
import { importFromHost } from './host.js'

/** The settings namespace. */
export const NAMESPACE = 'plur'
/** What `capture` may be: the user's typed turns, every turn, or nothing. */
export const CAPTURE_MODES = Object.freeze(['user', 'all', 'off'])
/**
 * `PLUR_CAPTURE` in DSH's environment (the variable plur's own processes read): `user`, `all` or `off`
 * overrides every other capture setting (config, settings.yaml, `/plur capture`) for this process, so a
 * headless run needs no YAML to capture nothing: `PLUR_CAPTURE=off dsh --profile headless "..."`.
 * @param {Record<string, string | undefined>} env - the environment.
 * @returns {'user' | 'all' | 'off' | undefined} the mode, or `undefined` when unset or empty.
 * @throws {Error} on another value, naming it and the ones it may be.
 */
export function captureFromEnv (env) {
  const raw = (env.PLUR_CAPTURE ?? '').trim().toLowerCase()
  if (raw === '') return undefined
  if (!CAPTURE_MODES.includes(raw)) throw new Error(`@plur-ai/dsh: PLUR_CAPTURE=${JSON.stringify(env.PLUR_CAPTURE)} is invalid: use ${CAPTURE_MODES.join(', ')} (or unset it)`)
  return raw
}

/** The user-changeable keys and their defaults. */
export const LIVE_DEFAULTS = Object.freeze({ enabled: true, capture: 'user', scope: 'cwd' })

/** Current `{enabled, capture, scope}`, from the seam when there is one, else the config. */
export class LiveSettings {
  /**
   * @param {{enabled: boolean, capture: string, scope: string}} base - the config's values.
   * @param {(next: {enabled: boolean, capture: string, scope: string}, prev: object) => void} onChange - called after a change.
   */
  constructor (base, onChange) {
    this.base = Object.freeze({ ...base })
    this.current = this.base
    this.onChange = onChange
    /** @type {{update: (patch: object) => Promise<unknown>} | undefined} the seam's scope when registered. */
    this.scope = undefined
  }

  /** @returns {{enabled: boolean, capture: string, scope: string}} the current values. */
  get () {
    return this.current
  }

  /** Apply a resolved value (from the seam, or the base again). */
  set (value) {
    const next = Object.freeze({ ...this.base, ...pick(value) })
    const prev = this.current
    if (prev.enabled === next.enabled && prev.capture === next.capture && prev.scope === next.scope) return
    this.current = next
    this.onChange(next, prev)
  }

  /**
   * Change keys for good: through the seam (persisted in the user's settings document) when there is
   * one, else in this process only (until the host restarts).
   * @param {Partial<{enabled: boolean, capture: string, scope: string}>} patch
   * @returns {Promise<'settings' | 'process'>} where the change was kept.
   */
  async update (patch) {
    if (this.scope !== undefined) {
      await this.scope.update(patch)
      return 'settings'
    }
    this.set({ ...this.current, ...patch })
    return 'process'
  }
}

function pick (value) {
  const out = {}
  for (const key of Object.keys(LIVE_DEFAULTS)) if (value?.[key] !== undefined) out[key] = value[key]
  return out
}

/**
 * Register the `plur` namespace in DSH's settings seam, in its own fiber (the plugin boots without it).
 * @param {import('@deepseek-ai/cordis').Context} ctx - the plugin context.
 * @param {LiveSettings} live - the settings to feed.
 * @param {(scope: string) => boolean} validScope - the scope check the config uses.
 * @returns {(scoped: import('@deepseek-ai/cordis').Context) => Promise<string>} the `ctx.inject(['settings'], ...)` body.
 */
export function settingsMount (ctx, live, validScope) {
  return async (scoped) => {
    const { module } = await importFromHost('@deepseek-ai/schemastery', { own: () => import('@deepseek-ai/schemastery') })
    const z = module.default ?? module
    const schema = z.object({
      enabled: z.boolean().default(LIVE_DEFAULTS.enabled).description('Memory on: the plur block in every request and the plur_* tools. Off: neither (nothing is deleted).'),
      capture: z.union(CAPTURE_MODES).default(LIVE_DEFAULTS.capture).description('What plur keeps from the conversation: user = what you type, all = also the answers, off = nothing.'),
      scope: z.string().default(LIVE_DEFAULTS.scope).description("Where memories live: 'cwd' or 'project' (the session folder's project), 'global', or one fixed scope such as 'project:name'."),
    })
    const registered = scoped.settings.register(NAMESPACE, schema, {
      base: { ...live.base },
      validate: (value) => {
        if (value?.scope !== undefined && !validScope(value.scope)) throw new Error(`plur.scope ${JSON.stringify(value.scope)} is invalid: use 'cwd', 'project', 'global', 'project:<name>' or 'agent:<name>'`)
      },
    })
    live.scope = registered
    live.set(registered.get())
    registered.watch((next) => live.set(next))
    scoped.effect(() => () => {
      live.scope = undefined
      live.set(live.base)
    }, 'plur: settings back to the profile config')
    return 'settings seam'
  }
}
