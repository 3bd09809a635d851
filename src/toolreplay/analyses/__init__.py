"""Pure analyses: records in, findings out. None of them prints or exits."""
