/**
 * A card's `needs:` is text in its file (written once, e.g. "an OpenAI key: write
 * keys/providers/openai.key"); it does not change when the person saves that key on the board. A
 * `needs:` about a provider's key is shown as met once every provider it names has a key saved, rather
 * than contradicting the key panel.
 */
import type { BoardView, CardView, ProviderView } from '../shared/board-types.ts';

const ABOUT_A_KEY = /\bkeys?\b|api[_ ]?key|keys\/providers\//i;

/** The providers a `needs:` about a key names (by name, case-insensitive, as a word), or none. */
export function keyNeedsProviders(needs: string, providers: readonly ProviderView[]): ProviderView[] {
  if (!ABOUT_A_KEY.test(needs)) return [];
  const text = needs.toLowerCase();
  return providers.filter((p) => {
    const name = p.name.toLowerCase();
    return new RegExp(`(^|[^a-z0-9])${name.replace(/[^a-z0-9]/g, '\\$&')}([^a-z0-9]|$)`).test(text);
  });
}

/** The card with its `needs:` shown as met (`needsMet`) when it is about keys that are all saved now. */
export function withKeyNeeds(card: CardView, providers: readonly ProviderView[] | undefined): CardView {
  if (!card.needs || !providers) return card;
  const named = keyNeedsProviders(card.needs, providers);
  if (named.length === 0 || !named.every((p) => p.hasKey)) return card;
  const { needs, ...rest } = card;
  const names = named.map((p) => p.name).join(' and ');
  return { ...rest, needsMet: `${names} key${named.length > 1 ? 's' : ''} saved`, needsWas: needs };
}

/** The board with each card's key `needs:` met where so (other cards keep their identity). */
export function boardWithKeyNeeds(
  board: BoardView,
  providers: readonly ProviderView[] | undefined,
): BoardView {
  if (!providers?.some((p) => p.hasKey)) return board;
  let changed = false;
  const cards = board.cards.map((c) => {
    const v = withKeyNeeds(c, providers);
    if (v !== c) changed = true;
    return v;
  });
  return changed ? { ...board, cards } : board;
}
