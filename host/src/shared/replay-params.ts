/** A replay card's parameters as the board's form shows them (docs/workflows.md, "Replay"). */
export interface ReplayParamField {
  name: string;
  description: string;
  /** The recorded value: what the run uses when the card gives none. */
  example: string;
  sensitive: boolean;
  optional: boolean;
  /** The card's value (`params:` front matter), if it gives one; never a sensitive one's. */
  value?: string;
  /** A sensitive parameter: the supervisor keeps a value for it (the card holds its reference). */
  stored?: boolean;
}

export interface ReplayParamsView {
  /** Whether the card's flow replays a workflow (runner replay): the form is for those cards only. */
  replay: boolean;
  params: ReplayParamField[];
  /** Why there are no parameters to show (no workflow, or an invalid one). */
  problem?: string;
}
