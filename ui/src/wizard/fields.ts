// Field shapes shared by the draft (draft.ts) and the join steps (chain.ts).

export interface SchemaField {
  name: string;
  type: string;
}

export interface OutputField {
  from: "left" | "right";
  field: string;
  as: string;
  on: boolean;
}
