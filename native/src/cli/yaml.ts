// YAML for desktop-cli (`--format yaml`, `do`'s steps, `fill`'s stdin): a bundle of its own
// (desktop-yaml.cjs), loaded only by the commands that need it, so the others start no slower.
import { Document, isScalar, isSeq, parse, visit } from 'yaml';

export { parse };

/** YAML as the public desktop-cli prints it: block maps, lists of plain values inline (b: [1, 2, 3, 4]). */
export function stringify(value: unknown): string {
  const doc = new Document(value);
  visit(doc, {
    Seq(_, node) {
      if (isSeq(node) && node.items.every((i) => isScalar(i))) node.flow = true;
    },
  });
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false });
}
