"""The report room: report.md + report.html + PNG figures of an experiment."""
