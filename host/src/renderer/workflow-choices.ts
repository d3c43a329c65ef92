/** What the workflow editor's parts share: the schema's choices and the edit function. */
import { createContext } from 'react';
import type { Workflow } from '@runboard/supervisor/protocol/data';
import type { CardWorkflowView } from '../shared/workflow-edit.ts';

/** The schema's choices (action and parameter types), as the host sent them with the workflow. */
export const Choices = createContext<Pick<CardWorkflowView, 'actionTypes' | 'paramTypes'>>({
  actionTypes: [],
  paramTypes: [],
});

/** An edit of the workflow being edited: a function from the old whole to the new. */
export type Edit = (f: (w: Workflow) => Workflow) => void;
