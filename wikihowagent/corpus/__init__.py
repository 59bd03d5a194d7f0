"""The corpus stage: WikiHow articles -> tutorials placed in the paper's domains and topics (`core`,
`domains`), balanced samples (`sampling`), corpus statistics and figures (`corpus_stats`), the topic knowledge
graph (`graph`), and the `tutorials` / `stats` commands (`command`)."""
