// Topic configs the HTTP and explorer tests share.

/** A topic with two filtered subscriptions: one SQL rule with an action, one correlation rule. */
export const EVENTS_TOPIC = {
  Name: 'events',
  Subscriptions: [
    {
      Name: 'big',
      Rules: [
        {
          Name: 'over-1000',
          Properties: {
            FilterType: 'Sql',
            SqlFilter: { SqlExpression: 'amount > 1000' },
            Action: { SqlExpression: "SET priority = 'high'" },
          },
        },
      ],
    },
    {
      Name: 'eu',
      Rules: [
        {
          Name: 'eu-only',
          Properties: { FilterType: 'Correlation', CorrelationFilter: { Label: 'OrderPaid', Properties: { region: 'eu' } } },
        },
      ],
    },
  ],
};
