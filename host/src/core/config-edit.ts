/**
 * Sets values in a YAML text so that only those values change: every other byte (comments, inline
 * comments, flow collections, quoting, blank lines) stays as the person wrote it. The yaml Document API
 * gives each scalar's source range; a changed scalar is spliced in place. Only a value whose key is
 * missing (a new column limit) needs the document re-stringified, and then only the parts the yaml
 * library cannot keep (rare layouts) may be restyled.
 */
import YAML, { isScalar } from 'yaml';

export interface YamlSet {
  path: readonly string[];
  /** `undefined` removes the key. */
  value: number | undefined;
}

export function setYamlValues(text: string, sets: readonly YamlSet[]): string {
  const doc = YAML.parseDocument(text);
  if (doc.errors.length) throw new Error(`config.yaml is not valid YAML: ${doc.errors[0]!.message}`);
  const splices: { from: number; to: number; text: string }[] = [];
  const structural: YamlSet[] = [];
  for (const s of sets) {
    const node = doc.getIn(s.path, true);
    if (node === undefined) {
      if (s.value !== undefined) structural.push(s);
      continue;
    }
    if (s.value === undefined || !isScalar(node) || !node.range) {
      structural.push(s);
      continue;
    }
    if (node.value === s.value) continue;
    splices.push({ from: node.range[0], to: node.range[1], text: String(s.value) });
  }
  let out = text;
  for (const sp of splices.sort((a, b) => b.from - a.from))
    out = out.slice(0, sp.from) + sp.text + out.slice(sp.to);
  if (!structural.length) return out;
  const next = YAML.parseDocument(out);
  for (const s of structural) {
    if (s.value === undefined) next.deleteIn(s.path);
    else next.setIn(s.path, s.value);
  }
  return next.toString({ lineWidth: 0, flowCollectionPadding: false });
}

/**
 * Adds `value` to the list at `path` (created when missing; nothing changes when it is there already),
 * keeping the rest of the text's comments and layout as the yaml library keeps them.
 */
export function addYamlListItem(text: string, listPath: readonly string[], value: string | number): string {
  const doc = YAML.parseDocument(text);
  if (doc.errors.length) throw new Error(`config.yaml is not valid YAML: ${doc.errors[0]!.message}`);
  const list = doc.getIn(listPath);
  const items = YAML.isSeq(list) ? list.items.map((i) => (isScalar(i) ? i.value : i)) : undefined;
  if (items?.includes(value)) return text;
  if (items) doc.addIn(listPath, value);
  else doc.setIn(listPath, doc.createNode([value]));
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false });
}
