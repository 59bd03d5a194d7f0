"""wikihowagent: simulate teacher-learner conversations grounded in WikiHow tutorials, assess their
pedagogic quality, and measure how well automatic judges agree with humans."""

__version__ = "0.1.0"
