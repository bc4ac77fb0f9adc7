/** The databases the store runs on: one folder each (sqlite/, postgres/). */
export type Dialect = 'sqlite' | 'postgres'
