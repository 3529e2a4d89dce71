/**
 * The `plur-memory` runtime skill: how the model should use the memory block and the tools.
 *
 * @module @plur-ai/dsh/skill
 */

/** Skill registration for `ctx.skills.register()` (`source` and `content` are required by dsh-skill). */
export const SKILL = Object.freeze({
  name: 'plur-memory',
  description: 'How to use plur long-term memory: the memory block in the system prompt and the plur_* tools.',
  whenToUse: 'When the user refers to something from an earlier session, states a lasting preference or fact, or corrects a remembered one.',
  source: 'runtime',
  content: [
    '# plur long-term memory',
    '',
    'The system prompt carries a memory block recalled for the latest message the user typed; it stays the same for every step of a turn.',
    'Each line there is one engram: `[id] (type, scope) statement`.',
    '',
    '- Use `plur_recall` to look further than the block shows.',
    '- Use `plur_learn` for durable facts, preferences and procedures the user states; one self-contained statement per call (`about: \'user\'` for the user\'s own life, kept for every project; `about: \'project\'` for this project\'s code and work).',
    '- Use `plur_update` with the id when the user corrects or changes a memory (it keeps its id); `plur_forget` when it no longer holds.',
    '- Use `plur_show` to read one memory whole, `plur_list` to browse them (by type, tag or words).',
    '- Use `plur_feedback` to mark a shown engram useful or not.',
    '- Never learn secrets (passwords, tokens, keys).',
  ].join('\n'),
})
