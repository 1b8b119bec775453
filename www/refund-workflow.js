// The demo's refund workflow (SPEC §20), run in the page by workflow-panel.js:
//
//   check    validates the request against the workflow's inputSchema and works out what to pay
//            back: all of it for faulty goods, else the amount less a 10 % restocking fee;
//   approval suspends with that quote until a person decides (`{ approved, note? }`);
//   issue    pays the refund through `ledger` (the demo's stand-in for a payment API) or records
//            the decline.
//
// No storage is given: outside a Mastra the package keeps each run's snapshot in its default
// store, IndexedDB in a page, so a run that waits for approval is still there after a reload and
// any tab of the page can resume it (of two that try, one runs; the other is refused).

export const REFUND_WORKFLOW_ID = 'demo-refund';

/** The steps in order, with what the panel calls them. */
export const REFUND_STEPS = [
  { id: 'check', label: 'Check the request' },
  { id: 'approval', label: 'Approval' },
  { id: 'issue', label: 'Issue the refund' },
];

/** The largest refund the demo takes, in euros. */
export const MAX_AMOUNT = 5000;
/** What a refund of goods that are not faulty keeps back. */
const RESTOCKING_FEE = 0.1;
/** Reasons that mean the goods were faulty (no restocking fee). */
const FAULTY = /\b(broke|broken|damaged|defective|faulty|missing|never arrived|wrong item)\b/i;

const inputSchema = {
  type: 'object',
  properties: {
    amount: { type: 'number', exclusiveMinimum: 0, maximum: MAX_AMOUNT, description: 'What the customer paid, in euros' },
    reason: { type: 'string', minLength: 3, maxLength: 200, description: 'Why the customer wants the money back' },
  },
  required: ['amount', 'reason'],
  additionalProperties: false,
};

const quoteSchema = {
  type: 'object',
  properties: {
    amount: { type: 'number' },
    reason: { type: 'string' },
    fee: { type: 'number' },
    refund: { type: 'number' },
    policy: { type: 'string' },
  },
  required: ['amount', 'reason', 'fee', 'refund', 'policy'],
};

const decisionSchema = {
  type: 'object',
  properties: {
    approved: { type: 'boolean' },
    note: { type: 'string', maxLength: 200 },
  },
  required: ['approved'],
  additionalProperties: false,
};

const outcomeSchema = {
  type: 'object',
  properties: {
    outcome: { enum: ['refunded', 'declined'] },
    amount: { type: 'number' },
    refund: { type: 'number' },
    reference: { type: 'string' },
    note: { type: 'string' },
  },
  required: ['outcome', 'amount'],
};

/**
 * What a request of `amount` euros for `reason` pays back: `{ fee, refund, policy }`, counted in
 * whole cents so that 10 % of 19.99 is 2.00, not 1.9990000000000001.
 */
export function refundQuote(amount, reason) {
  const cents = Math.round(amount * 100);
  const faulty = FAULTY.test(reason);
  const feeCents = faulty ? 0 : Math.round(cents * RESTOCKING_FEE);
  return {
    fee: feeCents / 100,
    refund: (cents - feeCents) / 100,
    policy: faulty ? 'Faulty goods: the full amount' : `Not faulty: less a ${RESTOCKING_FEE * 100} % restocking fee`,
  };
}

/** Waits `ms`, or less when `signal` aborts (a canceled run does not wait for nothing). */
function pause(ms, signal) {
  return new Promise((resolve) => {
    if (!(ms > 0) || signal?.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/**
 * The committed refund workflow, built with `pkg` (the wasm-agent module). `ledger.pay({ runId,
 * refund, reason })` pays an approved refund and resolves to its reference. `checkDelayMs`: how
 * long the check step takes (the page's `?refund=<ms>` switch), so a reload can land while it runs.
 */
export function buildRefundWorkflow(pkg, { ledger, checkDelayMs = 0 }) {
  const { createStep, createWorkflow } = pkg;

  const check = createStep({
    id: 'check',
    description: 'Checks the request and works out the refund',
    inputSchema,
    outputSchema: quoteSchema,
    execute: async ({ inputData, abortSignal }) => {
      await pause(checkDelayMs, abortSignal);
      const reason = inputData.reason.trim();
      if (reason.length < 3) throw new Error('The reason says nothing: write why the money should go back.');
      return { amount: inputData.amount, reason, ...refundQuote(inputData.amount, reason) };
    },
  });

  const approval = createStep({
    id: 'approval',
    description: 'Waits for a person to approve or decline the refund',
    inputSchema: quoteSchema,
    suspendSchema: quoteSchema,
    resumeSchema: decisionSchema,
    execute: async ({ inputData, resumeData, suspend }) => {
      // First run: suspend with the quote. Resumed: the decision (checked against resumeSchema).
      if (!resumeData) return suspend(inputData);
      return { ...inputData, approved: resumeData.approved, note: resumeData.note ?? '' };
    },
  });

  const issue = createStep({
    id: 'issue',
    description: 'Pays an approved refund, or records the decline',
    outputSchema: outcomeSchema,
    execute: async ({ inputData, runId }) => {
      const { amount, refund, reason, approved, note } = inputData;
      if (!approved) return { outcome: 'declined', amount, note };
      const reference = await ledger.pay({ runId, refund, reason });
      return { outcome: 'refunded', amount, refund, reference, note };
    },
  });

  return createWorkflow({
    id: REFUND_WORKFLOW_ID,
    description: 'A refund request: checked, approved or declined by a person, then paid out',
    inputSchema,
    outputSchema: outcomeSchema,
  })
    .then(check)
    .then(approval)
    .then(issue)
    .commit();
}
