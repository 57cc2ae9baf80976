/** A configuration problem: one line per problem, each naming the key (and where it came from). */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.map((p) => `config error: ${p}`).join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}
