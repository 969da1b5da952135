"""Choose how to search: the recall model, pricing, the planner and the budget."""
