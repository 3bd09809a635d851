"""The GitHub Action's side: workflow-command annotations, the job summary, the sticky PR comment."""
