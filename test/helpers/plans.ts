// PostgreSQL's plans as EXPLAIN (ANALYZE, FORMAT JSON) gives them: what a test counts to
// tell a read bounded by its page from one that grows with the table.

export interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Actual Rows': number
  'Actual Loops': number
  'Rows Removed by Filter'?: number
  'Rows Removed by Join Filter'?: number
  Plans?: PlanNode[]
}

/** The rows the nodes of a plan that scan `table` read, in all: those they gave, and those their filters threw away. */
export const rowsRead = (node: PlanNode, table: string): number =>
  (node['Relation Name'] === table && /Scan/.test(node['Node Type']) ? (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'] : 0) +
  (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child, table), 0)

/** The pairs of rows the joins of a plan matched up and their filters threw away: a join on no key compares every row of one side with every row of the other. */
export const pairsRejected = (node: PlanNode): number =>
  (node['Rows Removed by Join Filter'] ?? 0) * node['Actual Loops'] + (node.Plans ?? []).reduce((sum, child) => sum + pairsRejected(child), 0)
