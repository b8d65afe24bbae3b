// A model named to a reader, the same in the page's menu and in the evaluation's tables: its name,
// then its manifest title without the name again ("performer: trained with causal FAVOR+", where
// the title is "Performer: trained with causal FAVOR+").
export function modelLabel({ name, title }) {
  const rest = title.toLowerCase().startsWith(`${name.toLowerCase()}: `) ? title.slice(name.length + 2) : title;
  return `${name}: ${rest}`;
}
