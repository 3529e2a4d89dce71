// Test-only DSH plugin: appends each `plur/show` event of @plur-ai/dsh (one per new block shown:
// whether it was the agent's first, how long the bounded wait took, whether the block landed) and
// each `plur/refresh` (round trip and the service's own time) and each change of the `plur` settings
// namespace (`settings/updated`) to the file named by
// $PLUR_E2E_PROBE, one JSON object per line. It only listens.
import { appendFileSync } from 'node:fs'

export const name = 'plur-e2e-probe'

export function apply (ctx) {
  const file = process.env.PLUR_E2E_PROBE
  if (file === undefined || file === '') return
  ctx.on('plur/show', ({ agent, first, waitedMs, settled, changed, hash }) => {
    appendFileSync(file, JSON.stringify({ event: 'show', agent: agent?.id, first, waitedMs, settled, changed, hash }) + '\n')
  })
  ctx.on('settings/updated', (ns, next) => {
    if (ns === 'plur') appendFileSync(file, JSON.stringify({ event: 'settings', ns, enabled: next?.enabled, capture: next?.capture }) + '\n')
  })
  ctx.on('plur/refresh', ({ agent, outcome, roundTripMs, serviceMs }) => {
    appendFileSync(file, JSON.stringify({ event: 'refresh', agent: agent?.id, outcome, roundTripMs, serviceMs }) + '\n')
  })
}
